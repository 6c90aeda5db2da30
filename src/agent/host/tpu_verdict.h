// Whether a job that wants the TPU may start on this host, and the two things the agent
// may do about a TPU in the way: remove a stale lockfile, and kill an orphaned holder.
//
// DecideTpu is a pure function of one scan (tpu_scan.h) and of the pids that belong to
// live jobs. The claimants are the processes holding a lock on the libtpu lockfile and
// the processes with a chip's device node open. Its verdict is one of:
//
//   - free: no claimant and no lockfile.
//   - held by job J: a claimant belongs to the live job J. The new job waits its turn
//     (or, with no_wait, is refused naming J, the pid, the user and the command).
//   - stale lockfile: the lockfile exists, no process holds a lock on it and no process
//     has a device open. libtpu's lock is a lockf lock, which the kernel drops when its
//     process dies (even by SIGKILL), so such a file blocks no one that can open it but
//     is what "TPU already in use" guides tell people to delete by hand; and another
//     user's 0600 file does block libtpu's open(). It is removed, and the job's log says
//     so (StaleLockfileLine).
//   - orphan: a claimant belongs to no live job (a child of a killed run, a notebook
//     kernel, someone's python in a tmux). The job is refused naming each orphan's
//     pid, user and command; with kill_stale the agent kills them (below) and decides
//     again.
// Held by a job comes before orphan: the job would have to wait anyway.
//
// ClaimTpu scans, decides and acts. What it never does: remove a lockfile that a live
// process holds a lock on. Its removal does not trust the scan alone: it opens the file
// (O_NOFOLLOW, never creating it), checks the inode is the one scanned, takes the lock
// itself with lockf(F_TLOCK) and unlinks the path only while holding it and only if the
// path still names that inode. A lock some process took since the scan, or one
// /proc/locks did not show, makes F_TLOCK fail, and the file stays: the verdict is then
// decided again from a new scan, and if the lock is still invisible it is an orphan
// whose holder cannot be named.
//
// Killing (kill_stale): each orphan with a pid gets SIGTERM, and SIGKILL when it has
// not ended kOrphanTermGrace later; the agent then waits up to kOrphanKillWait for it
// to end. Signals go through a pidfd opened and checked against the scanned start time,
// so a pid reused since the scan is never signalled. kill_stale acts on real pids:
// HostPaths::proc must be the host's /proc.
//
// Thread-safety: stateless. ClaimTpu blocks up to the grace periods when it kills.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "agent/host/host_paths.h"
#include "agent/host/tpu_scan.h"
#include "util/status.h"

namespace tpufleet::agent::host {

/// How long an orphan has to exit after SIGTERM: a JAX process checkpoints on SIGTERM
/// (its preemption notice), which takes seconds, and the user asked for it gone.
inline constexpr std::chrono::milliseconds kOrphanTermGrace{5000};
/// How long the kernel may take to tear a SIGKILLed process down (unmapping tens of GiB
/// of pinned host memory takes seconds) before the agent reports it still there.
inline constexpr std::chrono::milliseconds kOrphanKillWait{10000};

enum class TpuVerdictKind { kFree, kHeldByJob, kStaleLockfile, kOrphan };

/// A process in the way, and what it holds.
struct TpuClaimant {
  ProcessInfo process;
  std::vector<std::string> holds;  // device paths, and/or the lockfile's path
  std::string job;                 // its live job's id; "" for an orphan
};

struct TpuVerdict {
  TpuVerdictKind kind = TpuVerdictKind::kFree;
  std::string job;                     // kHeldByJob: the holding job's id
  std::vector<TpuClaimant> claimants;  // kHeldByJob: that job's; kOrphan: the orphans
  /// kHeldByJob, kOrphan: one line for the refusal (or the waiting job's state).
  std::string message;
  /// What the agent did, one line each, for the job's log: the orphans it killed (or
  /// failed to), the stale lockfile it removed. Empty from DecideTpu; from ClaimTpu it
  /// may hold lines whatever the kind (kills, then kFree), so log them always.
  std::vector<std::string> log_lines;
};

/// The pids of the live jobs' processes (every process of each job, not only its first),
/// each with its job's id.
using LiveJobPids = std::map<pid_t, std::string>;

/// The verdict for `facts` (see above). Pure.
TpuVerdict DecideTpu(const TpuFacts& facts, const LiveJobPids& live);

/// The line a job's log gets when the agent removed a stale lockfile.
std::string StaleLockfileLine();

struct ClaimOptions {
  bool kill_stale = false;  // kill orphans (see above) instead of refusing
  std::chrono::milliseconds term_grace = kOrphanTermGrace;
  std::chrono::milliseconds kill_wait = kOrphanKillWait;
};

/// Scans, decides and acts (removes a stale lockfile; with kill_stale, kills orphans and
/// decides again). kFree and kStaleLockfile mean the job may start now (the latter with
/// its log_lines said); kHeldByJob means wait or refuse; kOrphan means refuse. Internal
/// when the lockfile cannot be removed (not a regular file, or unlink fails).
Result<TpuVerdict> ClaimTpu(const HostPaths& paths, const LiveJobPids& live,
                            const ClaimOptions& options = {});

}  // namespace tpufleet::agent::host
