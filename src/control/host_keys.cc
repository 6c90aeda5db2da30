#include "control/host_keys.h"

#include <algorithm>

#include "ssh/ssh_files.h"
#include "util/strings.h"

namespace tpufleet {

Status PinSshHostsKeys(const CloudNode& node, const std::string& node_name, int port,
                       const std::vector<WorkerRecord>& pinned,
                       const std::function<bool(const HostKeyQuestion&)>& confirm,
                       std::vector<WorkerIdentity>& ids, std::vector<std::string>* confirmed) {
  ids.resize(std::max(ids.size(), node.workers.size()));
  for (size_t i = 0; i < node.workers.size(); ++i) {
    WorkerIdentity& id = ids[i];
    id.index = static_cast<int>(i);
    const std::string& address = node.workers[i].address;
    if (!id.host_key.empty()) {
      continue;  // the user's known_hosts has it
    }
    for (const WorkerRecord& old : pinned) {
      if (old.index == id.index && old.address == address && !old.host_key.empty()) {
        id.host_key = old.host_key;  // pinned by an earlier up; login verifies it
      }
    }
    if (!id.host_key.empty()) {
      continue;
    }
    std::string fix = "; run `ssh " + address + "` once and check the fingerprint it shows, " +
                      "or run up at a terminal (or with --yes) to pin the key it offers";
    if (id.offered_host_key.empty()) {
      return FailedPreconditionError("no host key for " + address +
                                     " in your known_hosts, and it offers none now" + fix);
    }
    HostKeyQuestion q{node_name,        id.index, address, port == 0 ? 22 : port,
                      id.offered_host_key, SshKeyLineFingerprint(id.offered_host_key)};
    if (!confirm || !confirm(q)) {
      return FailedPreconditionError("the host key of " + address + " (" + q.fingerprint +
                                     ") is not in your known_hosts and was not confirmed" +
                                     fix);
    }
    id.host_key = q.key;
    if (confirmed) {
      confirmed->push_back("worker=" + std::to_string(i) + " fingerprint=" + q.fingerprint);
    }
  }
  return Status::Ok();
}

std::string AuthorizeFleetKeyScript(const std::string& fleet_public_key) {
  return "k=" + ShellQuote(Trim(fleet_public_key)) +
         "; f=~/.ssh/authorized_keys; umask 077; mkdir -p ~/.ssh && touch \"$f\" && "
         "{ grep -qxF \"$k\" \"$f\" || { [ -z \"$(tail -c1 \"$f\")\" ] || echo >>\"$f\"; "
         "printf '%s\\n' \"$k\" >>\"$f\"; }; }\n";
}

}  // namespace tpufleet
