// `tpufleet jobs`, `logs`, `cancel` and `attach`: the fleet's jobs as the workers' node
// agents know them (control/jobs.h). `run` is run_command.cc.
#include <ostream>
#include <set>

#include "cli/command.h"
#include "cli/fleet_world.h"
#include "cli/job_output.h"
#include "control/fleet_metrics.h"
#include "control/jobs.h"
#include "control/ssh_login.h"
#include "util/strings.h"
#include "util/subprocess.h"
#include "util/log.h"
#include "util/timestamp.h"

namespace tpufleet::cli {

namespace {

// The world and the job `arg` names; or no world, and the exit status of the error
// already printed.
struct FoundJob {
  std::unique_ptr<WorldHandle> handle;
  JobView job;
  ExitStatus failed = ExitStatus::kOk;
};
FoundJob Find(Invocation& inv, const std::string& arg) {
  Result<std::unique_ptr<WorldHandle>> handle = OpenWorld(inv, false);
  if (!handle.ok()) {
    return {nullptr, {}, Fail(inv, handle.status())};
  }
  Result<JobView> job = FindJob((*handle)->world(), arg);
  if (!job.ok()) {
    return {nullptr, {}, JobError(inv, job.status())};
  }
  return {std::move(*handle), std::move(*job)};
}

// The detached gang watcher: its notes, each with the time, go to its log.
ExitStatus Watch(Invocation& inv, const std::string& id) {
  Result<std::unique_ptr<WorldHandle>> handle = OpenWorld(inv, false);
  if (!handle.ok()) {
    return Fail(inv, handle.status());
  }
  World& world = (*handle)->world();
  Status s = WatchJob(world, id, [&](const std::string& note) {
    inv.err << FormatTimestamp(world.clock.Now()) << " " << note << std::endl;
  });
  return s.ok() ? ExitStatus::kOk : Fail(inv, s.WithContext("watching job " + id));
}

// The verdicts of the running jobs of `report`, from one metrics round to their workers;
// none (and no round) when no job runs. A round that cannot be made is a warning: the
// table goes on without verdicts.
JobVerdicts RunningJobVerdicts(Invocation& inv, World& world, const JobsReport& report) {
  JobVerdicts verdicts;
  std::vector<WorkerTarget> workers;
  std::set<std::string> seen;
  for (const JobView& j : report.jobs) {
    for (const JobWorker& w : j.workers) {
      if (j.state == JobState::kRunning && seen.insert(w.target.name).second) {
        workers.push_back(w.target);
      }
    }
  }
  if (workers.empty()) {
    return verdicts;
  }
  Result<FleetMetrics> fleet = SampleFleet(world, workers, MetricsOptions{});
  if (!fleet.ok()) {
    inv.err << "tpufleet: warning: no verdicts: " << TerminalText(fleet.status().message())
            << "\n";
    return verdicts;
  }
  for (const JobView& j : report.jobs) {
    if (j.state != JobState::kRunning) {
      continue;
    }
    if (const GroupMetrics* g = FindJobGroup(*fleet, j.id)) {
      verdicts[j.id] = g->diagnosis;
      continue;
    }
    // No answering worker's sample shows it: say why, from the first that did not answer.
    Diagnosis unknown{Verdict::kUnknown, "no worker's sample shows job " + j.id, std::nullopt};
    for (const WorkerMetrics& w : fleet->workers) {
      if (w.target.node == j.node && !w.report.has_value()) {
        unknown.detail = w.status.message();
        break;
      }
    }
    verdicts[j.id] = unknown;
  }
  return verdicts;
}

}  // namespace

ExitStatus RunJobs(Invocation& inv) {
  if (std::optional<std::string> id = inv.args.Get("watch")) {
    return Watch(inv, *id);
  }
  Result<std::unique_ptr<WorldHandle>> handle = OpenWorld(inv, false);
  if (!handle.ok()) {
    return Fail(inv, handle.status());
  }
  World& world = (*handle)->world();
  Result<JobsReport> report = ListJobs(world, inv.args.positional);
  if (!report.ok()) {
    return JobError(inv, report.status());
  }
  for (const Status& s : report->missing) {
    inv.err << "tpufleet: warning: " << TerminalText(s.message()) << "\n";
  }
  for (JobView& j : report->jobs) {
    Result<std::vector<std::string>> stopped = ApplyGangRule(world, j);
    if (!stopped.ok()) {
      inv.err << "tpufleet: warning: job " << j.id << ": " << j.first_failure
              << "; stopping the other workers failed: " << stopped.status().message() << "\n";
    } else if (!stopped->empty()) {
      inv.err << "tpufleet: job " << j.id << ": " << j.first_failure << "; stopped it on "
              << Join(*stopped, ", ") << "\n";
    }
  }
  JobVerdicts verdicts = RunningJobVerdicts(inv, world, *report);
  int64_t now = NowUnixMs(world);
  if (inv.json) {
    api::JobsList list;
    for (const JobView& j : report->jobs) {
      list.jobs.push_back(ToApi(j, now, verdicts));
    }
    for (const Status& s : report->missing) {
      list.unreachable.push_back(s.message());
    }
    inv.out << api::ToJson(list) << "\n";
  } else if (report->jobs.empty()) {
    inv.out << "No jobs.\n";
  } else {
    PrintJobsTable(inv.out, *report, now, verdicts);
  }
  return ExitStatus::kOk;
}

ExitStatus RunLogs(Invocation& inv) {
  if (inv.args.positional.size() != 1) {
    return UsageError(inv, "logs takes one job: tpufleet logs JOB [--worker N] [-f] [--tail N]");
  }
  std::optional<double> worker = NumberFlag(inv, "worker", -1, 0, 1e6);
  std::optional<double> tail = NumberFlag(inv, "tail", -1, 0, 1e12);
  if (!worker || !tail) {
    return ExitStatus::kUsage;
  }
  FoundJob f = Find(inv, inv.args.positional[0]);
  if (!f.handle) {
    return f.failed;
  }
  World& world = f.handle->world();
  FollowOptions options;
  if (*worker >= 0) {
    options.worker = static_cast<int>(*worker);
  }
  if (*tail >= 0) {
    options.tail = static_cast<int64_t>(*tail);
  }
  options.follow = inv.args.Has("follow");
  InterruptWatch interrupt;
  Result<JobView> end = PrintLogs(inv, world, f.job, options, interrupt);
  if (interrupt.Interrupted()) {
    return ExitStatus::kInterrupted;
  }
  if (!end.ok()) {
    return JobError(inv, end.status());
  }
  if (options.follow) {
    inv.err << "tpufleet: job " << end->id << " " << DescribeJob(*end, NowUnixMs(world))
            << std::endl;
  }
  return ExitStatus::kOk;
}

ExitStatus RunCancel(Invocation& inv) {
  if (inv.args.positional.size() != 1) {
    return UsageError(inv, "cancel takes one job: tpufleet cancel JOB [--grace D]");
  }
  std::optional<std::chrono::seconds> grace = DurationFlag(inv, "grace", kDefaultCancelGrace);
  if (!grace) {
    return ExitStatus::kUsage;
  }
  FoundJob f = Find(inv, inv.args.positional[0]);
  if (!f.handle) {
    return f.failed;
  }
  World& world = f.handle->world();
  JobView job = f.job;
  if (!job.ended) {
    Result<JobView> after = CancelJob(world, job, *grace);
    if (!after.ok()) {
      return Fail(inv, after.status());
    }
    job = std::move(*after);
    for (const JobWorker& w : job.workers) {
      if (!w.status.ok()) {
        inv.err << "tpufleet: " << TerminalText(w.status.message()) << "\n";
      }
    }
  }
  if (inv.json) {
    inv.out << api::ToJson(ToApi(job, NowUnixMs(world))) << "\n";
  } else if (f.job.ended) {
    inv.out << "Job " << job.id << " (" << job.name << ") had already ended: "
            << DescribeJob(job, NowUnixMs(world)) << "\n";
  } else {
    inv.out << "Job " << job.id << " (" << job.name << ") "
            << DescribeJob(job, NowUnixMs(world)) << "\n";
  }
  return job.ended ? ExitStatus::kOk : ExitStatus::kFailure;
}

ExitStatus RunAttach(Invocation& inv) {
  if (inv.args.positional.size() != 1) {
    return UsageError(inv, "attach takes one job: tpufleet attach JOB");
  }
  const std::string& arg = inv.args.positional[0];
  if (inv.terminal.in == nullptr) {
    return Fail(inv, FailedPreconditionError("attach needs a terminal; `tpufleet logs -f " + arg +
                                             "` shows the job's output anywhere"));
  }
  FoundJob f = Find(inv, arg);
  if (!f.handle) {
    return f.failed;
  }
  if (f.job.ended) {
    return Fail(inv, FailedPreconditionError("job " + f.job.id + " has ended (" +
                                             DescribeJob(f.job, NowUnixMs(f.handle->world())) +
                                             "); its output: tpufleet logs " + f.job.id));
  }
  const JobWorker* zero = nullptr;
  for (const JobWorker& w : f.job.workers) {
    zero = w.target.worker == 0 ? &w : zero;
  }
  if (zero == nullptr) {
    return Fail(inv, InternalError("job " + f.job.id + " has no worker 0"));
  }
  Result<std::string> config = f.handle->world().ssh_files.Config();
  if (!config.ok()) {
    return Fail(inv, config.status());
  }
  Result<std::vector<std::string>> argv = SshLoginArgv(
      *config, zero->target, {std::string(api::kAgentBinaryPath), "attach", f.job.id}, true);
  if (!argv.ok()) {
    return Fail(inv, argv.status());
  }
  f.handle.reset();  // ssh runs without the state store
  inv.out.flush();
  inv.err.flush();
  return Fail(inv, ExecProgram(*argv));  // returns only when ssh could not be run
}

}  // namespace tpufleet::cli
