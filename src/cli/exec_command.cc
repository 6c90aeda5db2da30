// `tpufleet exec TARGET… -- COMMAND [ARG…]`: the command on every worker the targets
// name, at once, through the fan-out engine.
#include <ostream>

#include "cli/command.h"
#include "cli/exec_output.h"
#include "cli/fleet_world.h"
#include "cli/interrupt_watch.h"
#include "control/exec.h"
#include "control/resolve.h"

namespace tpufleet::cli {

ExitStatus RunExec(Invocation& inv) {
  const auto& pos = inv.args.positional;
  size_t split = inv.args.after_dashdash;
  if (split == std::string::npos || split == 0 || split == pos.size()) {
    return UsageError(inv,
                      "exec takes targets, then `--` and the command, e.g. "
                      "tpufleet exec all -- hostname");
  }
  ExecRequest request;
  request.targets.assign(pos.begin(), pos.begin() + static_cast<long>(split));
  request.argv.assign(pos.begin() + static_cast<long>(split), pos.end());
  request.fail_fast = inv.args.Has("fail-fast");
  if (inv.args.Has("timeout")) {
    auto d = DurationFlag(inv, "timeout", std::chrono::seconds(0));
    if (!d) {
      return ExitStatus::kUsage;
    }
    request.timeout = *d;
  }
  auto connect = DurationFlag(inv, "connect-timeout",
                              std::chrono::duration_cast<std::chrono::seconds>(
                                  kFanoutConnectTimeout));
  auto fanout = NumberFlag(inv, "fanout", static_cast<double>(kDefaultFanoutParallel), 1);
  if (!connect || !fanout) {
    return ExitStatus::kUsage;
  }
  request.connect_timeout = *connect;
  request.max_parallel = static_cast<size_t>(*fanout);

  Result<std::unique_ptr<WorldHandle>> handle = OpenWorld(inv, false);
  if (!handle.ok()) {
    return Fail(inv, handle.status());
  }
  World& world = (*handle)->world();
  Result<ExecPlan> plan = PlanExec(world, request);
  if (!plan.ok()) {
    return Fail(inv, plan.status());
  }
  ExecOutput::Mode mode = inv.json                 ? ExecOutput::Mode::kJson
                          : inv.args.Has("group") ? ExecOutput::Mode::kGrouped
                                                  : ExecOutput::Mode::kPrefixed;
  InterruptWatch interrupt;  // Ctrl-C stops the job; a second one ends tpufleet
  ExecOutput output(plan->workers, mode, inv.out, inv.err,
                    [&interrupt] { return interrupt.Interrupted(); });
  // A worker whose stored address does not answer is looked up again and retried.
  Status run = RunResolving(world, plan->workers, plan->job, output);
  if (!run.ok()) {
    return Fail(inv, run);
  }
  bool all_ok = output.Finish();
  if (interrupt.Interrupted()) {
    return ExitStatus::kInterrupted;
  }
  return all_ok ? ExitStatus::kOk : ExitStatus::kFailure;
}

}  // namespace tpufleet::cli
