// Exec: one command on every worker the targets name, through world.fanout (the libssh2
// engine, warm in the connection holder or cold in this process).
//
// The command is an argument vector, as `kubectl exec … -- CMD ARGS` takes it: every
// word reaches the remote side exactly as typed (quoted once, here), so `$`, `;`,
// quotes and newlines are data. For shell syntax, pass a shell: `-- bash -c 'a | b'`.
// Worker names and labels are only ever compared, never put in the command.
//
// On the worker the command runs in a process group of its own, under a few lines of
// POSIX sh that kill that group when the SSH connection goes away (StoppableCommand): so
// Ctrl-C, --fail-fast and --timeout stop the command itself, not just tpufleet's view
// of it, and nothing is left running.
//
// Thread-safety: as World's members.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "control/targets.h"
#include "control/world.h"
#include "ssh/fanout.h"

namespace tpufleet {

struct ExecRequest {
  std::vector<std::string> targets;  // ResolveTargets words
  std::vector<std::string> argv;     // the command and its arguments, never empty
  bool fail_fast = false;            // the first worker that fails stops the rest
  std::chrono::milliseconds timeout{0};  // per worker; 0 = none
  std::chrono::milliseconds connect_timeout = kFanoutConnectTimeout;
  size_t max_parallel = kDefaultFanoutParallel;
};

/// The line a worker's login shell runs for `argv`: the words quoted once, run by `sh`
/// in a new session whose process group gets SIGTERM when stdin (the SSH channel)
/// closes; its exit status is the command's.
std::string StoppableCommand(const std::vector<std::string>& argv);

/// The workers and the job for them. The targets' errors (ResolveTargets), and
/// FailedPrecondition for a worker tpufleet holds no pinned host key for.
struct ExecPlan {
  std::vector<WorkerTarget> workers;
  FanoutJob job;
};
Result<ExecPlan> PlanExec(World& world, const ExecRequest& request);

/// The job for `workers` with the fleet key, each worker's pinned key and login.
FanoutJob JobFor(const World& world, const std::vector<WorkerTarget>& workers);

}  // namespace tpufleet
