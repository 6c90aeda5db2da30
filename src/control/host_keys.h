// Host keys of ssh-hosts workers, for up: which key each worker is pinned to, and how
// the fleet key reaches a machine tpufleet did not make.
//
// A Cloud TPU worker's key comes from the node's guest attributes. An ssh-hosts machine
// has none: its key comes from the user's own known_hosts (the provider reads it), else
// from the pin an earlier up made, else from what the host offers now, and that only
// once the user has confirmed its fingerprint (at a terminal, or --yes). tpufleet never
// pins an unknown key by itself.
//
// Thread-safety: pure functions; `confirm` is called on the caller's thread.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "control/up.h"
#include "provider/provider.h"
#include "store/store.h"
#include "util/status.h"

namespace tpufleet {

/// Fills the empty host_key of each of `ids` (one per worker of `node`, whose addresses
/// are the spec's hosts): the key `pinned` has for the same worker and address, else the
/// offered key once `confirm` says yes. `confirmed` gets the fingerprint of each key
/// pinned on the user's word. FailedPrecondition, saying how to pin it, for a worker
/// left without a key (none offered, no `confirm`, or the user said no).
Status PinSshHostsKeys(const CloudNode& node, const std::string& node_name, int port,
                       const std::vector<WorkerRecord>& pinned,
                       const std::function<bool(const HostKeyQuestion&)>& confirm,
                       std::vector<WorkerIdentity>& ids, std::vector<std::string>* confirmed);

/// The script an ssh-hosts login (reached with the user's own key) runs on up's login
/// check: adds `fleet_public_key` to the login's ~/.ssh/authorized_keys unless that
/// line is there already, so exec and cp reach the machine with the fleet key, as every
/// other worker. Idempotent; a last line without a newline is ended first.
std::string AuthorizeFleetKeyScript(const std::string& fleet_public_key);

}  // namespace tpufleet
