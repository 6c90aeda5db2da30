#include "control/server_ssh.h"

#include "control/resolve.h"
#include "control/ssh_sync.h"
#include "core/fleet_spec.h"
#include "ssh/runner.h"
#include "ssh/ssh_files.h"
#include "ssh/ssh_include_mode.h"
#include "util/file.h"

namespace tpufleet {
namespace {

// The config and known_hosts are a few hundred bytes a worker.
constexpr size_t kMaxSshFileBytes = 16 << 20;

// The file's text, or "" when it cannot be read (it is then written).
std::string TextOf(const std::string& path) {
  Result<std::string> text = ReadFile(path, kMaxSshFileBytes);
  return text.ok() ? *text : std::string();
}

}  // namespace

std::vector<NodeRecord> ServerNodeRecords(const std::string& person,
                                const std::vector<api::WorkerHost>& hosts) {
  std::vector<NodeRecord> nodes;
  for (const api::WorkerHost& h : hosts) {
    if (nodes.empty() || nodes.back().name != h.node || nodes.back().fleet != h.fleet) {
      NodeRecord n;
      n.fleet = h.fleet;
      n.name = h.node;
      n.provider = ProviderName(Provider::kGcpTpu);
      n.port = h.port;
      n.login = person;
      nodes.push_back(std::move(n));
    }
    WorkerRecord w;
    w.index = h.worker;
    w.address = h.address;
    w.host_key = h.host_key;
    nodes.back().workers.push_back(std::move(w));
  }
  return nodes;
}

Result<std::string> ServerSshDir(const std::map<std::string, std::string>& env,
                                 const std::string& server) {
  auto home = env.find("HOME");
  if (home == env.end() || home->second.empty()) {
    return FailedPreconditionError("HOME is not set: nowhere to write the SSH names");
  }
  return home->second + "/.ssh/tpufleet/" + server;
}

Result<bool> WriteServerSshFiles(const std::string& dir, const std::string& url,
                                 const std::string& person,
                                 const std::vector<api::WorkerHost>& hosts,
                                 const std::string& program) {
  std::vector<SshHostEntry> entries =
      SshEntriesFor(ServerNodeRecords(person, hosts), "", {program, "ssh-proxy", "--server", url, "--"});
  std::string known_hosts = dir + "/known_hosts";
  TPUFLEET_ASSIGN_OR_RETURN(std::string config, RenderSshConfig(entries, known_hosts));
  if (TextOf(dir + "/config") == config && TextOf(known_hosts) == RenderKnownHosts(entries)) {
    return false;
  }
  TPUFLEET_TRY(WriteSshFiles(dir, entries));
  return true;
}

std::vector<SshHostEntry> DirectServerSshEntries(const std::string& person,
                                                 const std::vector<api::WorkerHost>& hosts) {
  std::vector<SshHostEntry> entries = SshEntriesFor(ServerNodeRecords(person, hosts), "");
  for (SshHostEntry& e : entries) {
    e.key_by_alias = true;
  }
  return entries;
}

Result<DirectServerSshFiles> MakeDirectServerSshFiles(const std::string& person,
                                                      const std::vector<api::WorkerHost>& hosts) {
  std::vector<SshHostEntry> entries = DirectServerSshEntries(person, hosts);
  DirectServerSshFiles files;
  TPUFLEET_ASSIGN_OR_RETURN(files.known_hosts,
                            MemoryFile::Make("known_hosts", RenderKnownHosts(entries)));
  TPUFLEET_ASSIGN_OR_RETURN(std::string config, RenderSshConfig(entries, files.known_hosts.path()));
  TPUFLEET_ASSIGN_OR_RETURN(files.config, MemoryFile::Make("config", config));
  return files;
}

Result<std::string> IncludeServerSshNames(const std::map<std::string, std::string>& env,
                                          const std::string& dir) {
  auto mode = env.find(std::string(kSshIncludeEnv));
  TPUFLEET_ASSIGN_OR_RETURN(std::optional<SshConfigOwner> owner,
                            ParseSshIncludeMode(mode == env.end() ? "" : mode->second));
  if (!owner) {
    return std::string();
  }
  auto home = env.find("HOME");
  std::string user_config = (home == env.end() ? "" : home->second) + "/.ssh/config";
  TPUFLEET_TRY(EnsureSshInclude(user_config, dir + "/config", *owner));
  return user_config;
}

Result<UniqueFd> ConnectToWorkerHost(const api::WorkerHost& host) {
  return ConnectTcp(host.address, host.port, kResolvedAddressTimeout);
}

}  // namespace tpufleet
