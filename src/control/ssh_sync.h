// Keeps tpufleet's SSH files in step with the state store: after any change to nodes
// or workers, the config and known_hosts are rewritten whole from the store's records
// (so a changed address or a deleted node never leaves a stale entry), and
// ~/.ssh/config includes them.
//
// Aliases: NODE is worker 0, NODE-wN is worker N (NODE-w0 too). Every worker's pinned
// host key goes in tpufleet's known_hosts; gcp-tpu nodes use the fleet key, ssh-hosts
// nodes the user's own keys.
//
// Thread-safety: SyncSshFiles serializes itself within a process.
#pragma once

#include <string>
#include <vector>

#include "control/world.h"
#include "ssh/ssh_files.h"

namespace tpufleet {

/// "trainer" for worker 0 with `primary`, else "trainer-w3".
std::string WorkerAlias(const std::string& node, int worker, bool primary = false);

/// The entries for every node in `records` that has workers with addresses.
std::vector<SshHostEntry> SshEntriesFor(const std::vector<NodeRecord>& records,
                                        const std::string& fleet_key_path);

/// Rewrites the SSH files from every node in the store and makes sure ~/.ssh/config
/// includes them.
Status SyncSshFiles(World& world);

}  // namespace tpufleet
