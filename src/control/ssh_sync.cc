#include "control/ssh_sync.h"

#include "core/fleet_spec.h"

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
  return world.ssh_files.Rewrite([&world]() -> Result<std::vector<SshHostEntry>> {
    TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> records, world.store.Nodes(""));
    return SshEntriesFor(records, world.keys.PrivateKeyPath(), ProxyArgvPrefix(world.paths));
  });
}

}  // namespace tpufleet
