// `tpufleet exec TARGET… -- COMMAND [ARG…]`: the command on every worker the targets
// name, at once, through the fan-out engine; through a team server, one `ssh` per worker
// as the person themself (cli/served_ssh.h), printed alike.
#include <optional>
#include <ostream>

#include "cli/command.h"
#include "cli/exec_output.h"
#include "cli/fleet_world.h"
#include "cli/interrupt_watch.h"
#include "cli/served_ssh.h"
#include "control/exec.h"
#include "control/resolve.h"
#include "control/ssh_processes.h"

namespace tpufleet::cli {

namespace {

// exec's request from its words and flags; nullopt when one was wrong (said already, in
// `*failed`).
std::optional<ExecRequest> ParseExec(Invocation& inv, ExitStatus* failed) {
  *failed = ExitStatus::kUsage;
  const auto& pos = inv.args.positional;
  size_t split = inv.args.after_dashdash;
  if (split == std::string::npos || split == 0 || split == pos.size()) {
    UsageError(inv,
               "exec takes targets, then `--` and the command, e.g. "
               "tpufleet exec all -- hostname");
    return std::nullopt;
  }
  ExecRequest request;
  request.targets.assign(pos.begin(), pos.begin() + static_cast<long>(split));
  request.argv.assign(pos.begin() + static_cast<long>(split), pos.end());
  request.fail_fast = inv.args.Has("fail-fast");
  if (inv.args.Has("timeout")) {
    auto d = DurationFlag(inv, "timeout", std::chrono::seconds(0));
    if (!d) {
      return std::nullopt;
    }
    request.timeout = *d;
  }
  auto connect = DurationFlag(inv, "connect-timeout",
                              std::chrono::duration_cast<std::chrono::seconds>(
                                  kFanoutConnectTimeout));
  auto fanout = NumberFlag(inv, "fanout", static_cast<double>(kDefaultFanoutParallel), 1);
  if (!connect || !fanout) {
    return std::nullopt;
  }
  request.connect_timeout = *connect;
  request.max_parallel = static_cast<size_t>(*fanout);
  return request;
}

ExecOutput::Mode OutputMode(const Invocation& inv) {
  return inv.json                 ? ExecOutput::Mode::kJson
         : inv.args.Has("group") ? ExecOutput::Mode::kGrouped
                                 : ExecOutput::Mode::kPrefixed;
}

// The exit status of a run `output` saw to its end.
ExitStatus Finished(ExecOutput& output, const InterruptWatch& interrupt) {
  bool all_ok = output.Finish();
  if (interrupt.Interrupted()) {
    return ExitStatus::kInterrupted;
  }
  return all_ok ? ExitStatus::kOk : ExitStatus::kFailure;
}

}  // namespace

ExitStatus RunExec(Invocation& inv) {
  ExitStatus failed = ExitStatus::kUsage;
  std::optional<ExecRequest> request = ParseExec(inv, &failed);
  if (!request) {
    return failed;
  }
  Result<std::unique_ptr<WorldHandle>> handle = OpenWorld(inv, false);
  if (!handle.ok()) {
    return Fail(inv, handle.status());
  }
  World& world = (*handle)->world();
  Result<ExecPlan> plan = PlanExec(world, *request);
  if (!plan.ok()) {
    return Fail(inv, plan.status());
  }
  InterruptWatch interrupt;  // Ctrl-C stops the job; a second one ends tpufleet
  ExecOutput output(plan->workers, OutputMode(inv), inv.out, inv.err,
                    [&interrupt] { return interrupt.Interrupted(); });
  // A worker whose stored address does not answer is looked up again and retried.
  Status run = RunResolving(world, plan->workers, plan->job, output);
  if (!run.ok()) {
    return Fail(inv, run);
  }
  return Finished(output, interrupt);
}

ExitStatus RunExecOverSsh(Invocation& inv, const ServerLogins& logins) {
  ExitStatus failed = ExitStatus::kUsage;
  std::optional<ExecRequest> request = ParseExec(inv, &failed);
  if (!request) {
    return failed;
  }
  if (Status s = RefuseLabelSelectors(request->targets); !s.ok()) {
    return UsageError(inv, s.message());
  }
  Result<std::vector<WorkerTarget>> workers = ResolveTargets(logins.nodes, request->targets);
  if (!workers.ok()) {
    return Fail(inv, workers.status());
  }
  SshProcessJob job;
  auto connect_s = std::chrono::ceil<std::chrono::seconds>(request->connect_timeout).count();
  for (const WorkerTarget& w : *workers) {
    // As the engine runs it: in a group of its own that ends when stdin (ssh) closes.
    job.programs.push_back({"ssh", "-F", logins.ssh.config.path(), "-T", "-o", "BatchMode=yes",
                            "-o", "ConnectTimeout=" + std::to_string(connect_s), "--", w.alias,
                            StoppableCommand(request->argv)});
  }
  job.hold_stdin = true;
  job.fail_fast = request->fail_fast;
  job.timeout = request->timeout;
  job.max_parallel = request->max_parallel;
  InterruptWatch interrupt;  // Ctrl-C stops the command; a second one ends tpufleet
  ExecOutput output(*workers, OutputMode(inv), inv.out, inv.err,
                    [&interrupt] { return interrupt.Interrupted(); });
  if (Status run = RunSshProcesses(job, output); !run.ok()) {
    return Fail(inv, run);
  }
  return Finished(output, interrupt);
}

}  // namespace tpufleet::cli
