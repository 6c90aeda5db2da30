// The SSH names a collaborator's laptop gets for a team server's workers (`tpufleet join`,
// and `tpufleet ssh-proxy --server URL`, which keeps them current):
//
//   ~/.ssh/tpufleet/HOST:PORT/config       Host blocks as the operator's (control/ssh_sync.h:
//                                          NODE for worker 0, NODE-wN), User PERSON, no
//                                          IdentityFile (their own keys), a ProxyCommand
//                                          `tpufleet ssh-proxy --server URL -- NODE N` and
//                                          HostKeyAlias, StrictHostKeyChecking yes
//   ~/.ssh/tpufleet/HOST:PORT/known_hosts  the host keys the server gave (GET /v1/hosts),
//                                          over its pinned TLS connection
//   ~/.ssh/config                          `Include` of that config (TPUFLEET_SSH_INCLUDE
//                                          as for the operator's)
//
// ssh-proxy asks the server for the worker's current address and keys at each
// connection and rewrites the two files when they changed (a recreate gives a worker a
// new address and new host keys), before ssh checks the key: `ssh NODE` keeps working,
// with no prompt, and a key the server did not give is still refused.
//
// Thread-safety: whole-file atomic writes; two at once write the same text.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "api/invite.h"
#include "ssh/ssh_files.h"
#include "store/store.h"
#include "util/file.h"
#include "util/status.h"
#include "util/unique_fd.h"

namespace tpufleet {

/// `hosts` (GET /v1/hosts) as node records, as the operator's SSH names and targets
/// (control/targets.h) are made from: one per node, its login `person`, no labels.
std::vector<NodeRecord> ServerNodeRecords(const std::string& person,
                                          const std::vector<api::WorkerHost>& hosts);

/// ~/.ssh/tpufleet/HOST:PORT for the server "HOST:PORT"; FailedPrecondition without HOME.
Result<std::string> ServerSshDir(const std::map<std::string, std::string>& env,
                                 const std::string& server);

/// Writes `dir`/config and known_hosts for `hosts` of the server `url`, where the
/// collaborator is `person`, the ProxyCommand running `program`, unless they already say
/// so. Whether anything was written.
Result<bool> WriteServerSshFiles(const std::string& dir, const std::string& url,
                                 const std::string& person,
                                 const std::vector<api::WorkerHost>& hosts,
                                 const std::string& program);

/// The Host blocks for `hosts`, as WriteServerSshFiles writes them, but reaching each
/// worker directly at the address the server gave (no ProxyCommand: the answer is
/// fresh) with its key looked up under its name (HostKeyAlias, StrictHostKeyChecking
/// yes): what tpufleet's own ssh uses for `--server URL exec|ssh|forward|cp|attach`.
/// `person`: their User there; "" leaves it to ssh (the local user's name).
std::vector<SshHostEntry> DirectServerSshEntries(const std::string& person,
                                                 const std::vector<api::WorkerHost>& hosts);
/// DirectServerSshEntries' config and the known_hosts it names, as files in memory
/// (util/file.h MemoryFile): `ssh -F config.path()` works while they live, and nothing is
/// left in a directory when the command ends, however it ends.
struct DirectServerSshFiles {
  MemoryFile known_hosts;
  MemoryFile config;
};
Result<DirectServerSshFiles> MakeDirectServerSshFiles(const std::string& person,
                                                      const std::vector<api::WorkerHost>& hosts);

/// Makes ~/.ssh/config include `dir`/config as TPUFLEET_SSH_INCLUDE in `env` says
/// (ssh/ssh_include_mode.h): the config edited, or "" when it is to be left alone.
Result<std::string> IncludeServerSshNames(const std::map<std::string, std::string>& env,
                                          const std::string& dir);

/// A connection to the SSH port of `host` at the address the server gave, within ssh's
/// own ConnectTimeout (control/resolve.h kResolvedAddressTimeout).
Result<UniqueFd> ConnectToWorkerHost(const api::WorkerHost& host);

}  // namespace tpufleet
