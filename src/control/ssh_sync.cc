#include "control/ssh_sync.h"

#include <fcntl.h>
#include <sys/file.h>

#include <cerrno>

#include "core/fleet_spec.h"
#include "util/file.h"
#include "util/unique_fd.h"

namespace tpufleet {

std::string WorkerAlias(const std::string& node, int worker, bool primary) {
  return primary ? node : node + "-w" + std::to_string(worker);
}

std::vector<std::string> ProxyArgvPrefix(const ControlPaths& paths) {
  if (paths.proxy_program.empty()) {
    return {};
  }
  std::vector<std::string> prefix = {paths.proxy_program, "ssh-proxy", "--state-dir",
                                     paths.state_dir, "--"};
  // A path no shell quoting keeps literal: connect to the stored addresses instead.
  return ProxyCommandLine(prefix).ok() ? prefix : std::vector<std::string>{};
}

std::vector<SshHostEntry> SshEntriesFor(const std::vector<NodeRecord>& records,
                                        const std::string& fleet_key_path,
                                        const std::vector<std::string>& proxy_prefix) {
  std::vector<SshHostEntry> out;
  for (const NodeRecord& r : records) {
    bool ssh_hosts = r.provider == ProviderName(Provider::kSshHosts);
    for (const WorkerRecord& w : r.workers) {
      if (w.address.empty()) {
        continue;
      }
      SshHostEntry e;
      e.address = w.address;
      e.port = r.port;
      e.user = r.login;
      // ssh-hosts machines take the user's own keys, as plain ssh would, and the host
      // key up pinned (from the user's known_hosts, or confirmed on first up); one that
      // has none yet is left to the user's known_hosts.
      e.identity_file = ssh_hosts ? "" : fleet_key_path;
      e.host_key = w.host_key;
      e.known_hosts_file = ssh_hosts && w.host_key.empty() ? "~/.ssh/known_hosts" : "";
      if (!ssh_hosts && !proxy_prefix.empty()) {
        e.proxy_command = proxy_prefix;
        e.proxy_command.push_back(r.name);
        e.proxy_command.push_back(std::to_string(w.index));
      }
      if (w.index == 0) {
        e.alias = WorkerAlias(r.name, 0, true);
        out.push_back(e);
      }
      e.alias = WorkerAlias(r.name, w.index);
      out.push_back(std::move(e));
    }
  }
  return out;
}

Status SyncSshFiles(World& world) {
  // Other processes write these files too (an ssh-proxy's refresh while up runs): each
  // reads the store and writes under the lock, so the last writer had the newest store.
  // The lock also orders threads of one process: each call opens the file anew, and
  // flock(2) locks of two open file descriptions exclude each other.
  TPUFLEET_TRY(MakePrivateDirs(world.paths.ssh_dir));
  std::string lock_path = world.paths.ssh_dir + "/lock";
  UniqueFd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (lock.get() < 0) {
    return ErrnoStatus(lock_path, errno);
  }
  while (::flock(lock.get(), LOCK_EX) != 0) {
    if (errno != EINTR) {
      return ErrnoStatus("flock " + lock_path, errno);
    }
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> records, world.store.Nodes(""));
  TPUFLEET_TRY(WriteSshFiles(world.paths.ssh_dir,
                             SshEntriesFor(records, world.paths.ssh_dir + "/id_ed25519",
                                           ProxyArgvPrefix(world.paths))));
  if (world.paths.user_ssh_config.empty()) {
    return Status::Ok();  // TPUFLEET_SSH_INCLUDE=off
  }
  return EnsureSshInclude(world.paths.user_ssh_config, world.paths.ssh_dir + "/config",
                          world.paths.user_ssh_config_owner);
}

}  // namespace tpufleet
