// Keeps tpufleet's SSH files in step with the state store: after any change to nodes
// or workers, the config and known_hosts are rewritten whole from the store's records
// (so a changed address or a deleted node never leaves a stale entry), and
// ~/.ssh/config includes them.
//
// Aliases: NODE is worker 0, NODE-wN is worker N (NODE-w0 too). Every worker's pinned
// host key goes in tpufleet's known_hosts; gcp-tpu nodes use the fleet key, ssh-hosts
// nodes the user's own keys.
//
// A gcp-tpu worker's address can change under its name (a stop and start, maintenance).
// With ControlPaths::proxy_program set, its Host blocks reach it through `tpufleet
// ssh-proxy --state-dir STATE -- NODE N` (ProxyCommand, control/resolve.h), which tries
// the address in the store and, when that does not answer, asks the cloud for the new
// one; HostKeyAlias keeps the pinned key the name's. ssh-hosts machines have the
// addresses their spec gives, which no cloud changes: they are connected to directly.
//
// Thread-safety: SyncSshFiles is serialized by World::ssh_files (SshFileDir: within a
// process and, by flock on STATE/ssh/lock, across processes).
#pragma once

#include <string>
#include <vector>

#include "control/world.h"
#include "ssh/ssh_files.h"

namespace tpufleet {

/// "trainer" for worker 0 with `primary`, else "trainer-w3".
std::string WorkerAlias(const std::string& node, int worker, bool primary = false);

/// The entries for every node in `records` that has workers with addresses.
/// `proxy_prefix`: the ProxyCommand's words before "NODE N" (ProxyArgvPrefix); empty:
/// every entry is connected to directly.
std::vector<SshHostEntry> SshEntriesFor(const std::vector<NodeRecord>& records,
                                        const std::string& fleet_key_path,
                                        const std::vector<std::string>& proxy_prefix = {});

/// `PROGRAM ssh-proxy --state-dir STATE --`, the words before the node and worker of a
/// ProxyCommand; empty when paths.proxy_program is.
std::vector<std::string> ProxyArgvPrefix(const ControlPaths& paths);

/// Rewrites the SSH files (World::ssh_files) from every node in the store and makes sure
/// ~/.ssh/config includes them.
Status SyncSshFiles(World& world);

}  // namespace tpufleet
