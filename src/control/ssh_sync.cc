#include "control/ssh_sync.h"

#include <mutex>

#include "core/fleet_spec.h"

namespace tpufleet {

std::string WorkerAlias(const std::string& node, int worker, bool primary) {
  return primary ? node : node + "-w" + std::to_string(worker);
}

std::vector<SshHostEntry> SshEntriesFor(const std::vector<NodeRecord>& records,
                                        const std::string& fleet_key_path) {
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
  static std::mutex mu;
  std::lock_guard<std::mutex> l(mu);
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> records, world.store.Nodes(""));
  TPUFLEET_TRY(WriteSshFiles(world.paths.ssh_dir,
                             SshEntriesFor(records, world.paths.ssh_dir + "/id_ed25519")));
  if (world.paths.user_ssh_config.empty()) {
    return Status::Ok();  // TPUFLEET_SSH_INCLUDE=off
  }
  return EnsureSshInclude(world.paths.user_ssh_config, world.paths.ssh_dir + "/config",
                          world.paths.user_ssh_config_owner);
}

}  // namespace tpufleet
