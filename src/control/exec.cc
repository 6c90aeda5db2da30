#include "control/exec.h"

#include "util/strings.h"

namespace tpufleet {

namespace {

// $1 is the command line. fd 3 keeps the channel as stdin for the watcher (an
// asynchronous list's own stdin is /dev/null in sh); setsid gives the command a process
// group to kill as a whole; the watcher's read returns only when the channel closes.
constexpr const char* kStopWrapper =
    "exec 3<&0; setsid sh -c \"$1\" </dev/null & c=$!; "
    "(read -r _ <&3; kill -TERM -$c) 2>/dev/null & w=$!; "
    "wait $c; s=$?; kill $w 2>/dev/null; exit $s";

}  // namespace

std::string StoppableCommand(const std::vector<std::string>& argv) {
  return "sh -c " + ShellQuote(kStopWrapper) + " tpufleet " + ShellQuote(ShellJoin(argv));
}

FanoutJob JobFor(const World& world, const std::vector<WorkerTarget>& workers) {
  FanoutJob job;
  job.key_path = world.keys.PrivateKeyPath();
  for (const auto& w : workers) {
    FanoutHost h;
    h.name = w.name;
    h.address = w.address;
    h.port = w.port;
    h.user = w.login.empty() ? world.login : w.login;
    h.host_key = w.host_key;
    job.hosts.push_back(h);
  }
  return job;
}

Result<ExecPlan> PlanExec(World& world, const ExecRequest& request) {
  if (request.argv.empty()) {
    return InvalidArgumentError("no command given: put it after `--`");
  }
  ExecPlan plan;
  // A worker without a pinned host key stays in: the fan-out fails it alone.
  TPUFLEET_ASSIGN_OR_RETURN(plan.workers, ResolveTargets(world.store, request.targets));
  plan.job = JobFor(world, plan.workers);
  plan.job.command = StoppableCommand(request.argv);
  plan.job.hold_stdin = true;
  plan.job.fail_fast = request.fail_fast;
  plan.job.command_timeout = request.timeout;
  plan.job.connect_timeout = request.connect_timeout;
  plan.job.max_parallel = request.max_parallel;
  return plan;
}

}  // namespace tpufleet
