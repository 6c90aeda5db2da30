// Stopping every process of one account: what accounts.apply does to a collaborator
// `tpufleet users remove` takes away (accounts.h).
//
// The signals are sent by a child that becomes the account (setresuid) and calls
// kill(-1, SIG): the kernel then signals every process that account may signal, which is
// every process whose real or saved uid is the account's, in the caller's PID namespace
// (a worker's own), atomically with respect to fork. A scan of /proc and a kill per pid
// would miss what is forked between the scan and the kill: a shell loop of `sleep`s, or a
// fork bomb, would survive it. Processes that changed their uids away (a setuid program
// the account ran) are not the account's any more, and root's keepers of its jobs are
// stopped through the job table (agent/ops.cc), so their jobs are recorded as cancelled.
//
// Thread-safety: forks; call from one thread (the agent's loop) with no other thread
// between fork and exec. REQUIRES: root.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

#include "agent/host/host_paths.h"
#include "util/status.h"

namespace tpufleet::agent::host {

/// How long the account's processes get between SIGTERM and SIGKILL: enough for a shell
/// or python to flush and exit, short because the agent's loop waits meanwhile.
inline constexpr std::chrono::milliseconds kStopGrace{2000};
/// After SIGKILL, how long the processes may take to be gone (the kernel's reaping).
inline constexpr std::chrono::milliseconds kKillWait{2000};

/// The live processes (not zombies) under `paths.proc` whose real or effective uid is `uid`.
int CountProcessesOf(const HostPaths& paths, uid_t uid);

/// SIGTERM to every process of `uid`, then SIGKILL to what is left after `grace`, then
/// waits up to kKillWait for none to be left. Returns how many there were at the start.
/// InvalidArgument for uid 0, (uid_t)-1 ("unchanged" to setresuid) and the agent's own
/// uid; Internal when some survive.
Result<int> StopProcessesOf(const HostPaths& paths, uid_t uid,
                            std::chrono::milliseconds grace = kStopGrace);

}  // namespace tpufleet::agent::host
