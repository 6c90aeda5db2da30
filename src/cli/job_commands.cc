// `tpufleet jobs`, `logs`, `cancel` and `attach`: the fleet's jobs as the workers' node
// agents know them (control/jobs.h). `run` is run_command.cc. Through a team server,
// `attach` runs here with the person's own ssh (cli/served_ssh.h); the others are served.
#include <optional>
#include <ostream>
#include <set>

#include "cli/command.h"
#include "cli/fleet_world.h"
#include "cli/job_output.h"
#include "cli/served_ssh.h"
#include "control/fleet_metrics.h"
#include "control/job_access.h"
#include "control/jobs.h"
#include "control/ssh_login.h"
#include "util/strings.h"
#include "util/subprocess.h"
#include "util/log.h"
#include "util/timestamp.h"

namespace tpufleet::cli {

namespace {

// The world and the job `arg` names among those the caller may see; or no world, and the
// exit status of the error already printed. `viewer_may_not`: what a caller who is only
// a viewer may not do ("cancel jobs"), refused before any job is looked for.
struct FoundJob {
  std::unique_ptr<WorldHandle> handle;
  JobView job;
  ExitStatus failed = ExitStatus::kOk;
};
FoundJob Find(Invocation& inv, const std::string& arg, const std::string& viewer_may_not = "") {
  Result<std::unique_ptr<WorldHandle>> handle = OpenWorld(inv, false);
  if (!handle.ok()) {
    return {nullptr, {}, Fail(inv, handle.status())};
  }
  if (!viewer_may_not.empty()) {
    if (Status may = CheckNotOnlyViewer((*handle)->world(), inv.access, viewer_may_not);
        !may.ok()) {
      return {nullptr, {}, Fail(inv, may)};
    }
  }
  Result<JobView> job = FindJob((*handle)->world(), arg, inv.access);
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
  Result<JobsReport> report = ListJobs(world, inv.args.positional, inv.access);
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
  InterruptWatch interrupt(inv.interrupt);
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
  FoundJob f = Find(inv, inv.args.positional[0], "cancel jobs");
  if (!f.handle) {
    return f.failed;
  }
  World& world = f.handle->world();
  if (Status may = CheckMayCancel(f.job, inv.access); !may.ok()) {
    return Fail(inv, may);
  }
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

namespace {

// attach's JOB, or the error printed: one word, and a terminal to attach.
std::optional<std::string> AttachArg(Invocation& inv, ExitStatus* failed) {
  if (inv.args.positional.size() != 1) {
    *failed = UsageError(inv, "attach takes one job: tpufleet attach JOB");
    return std::nullopt;
  }
  const std::string& arg = inv.args.positional[0];
  if (inv.terminal.in == nullptr) {
    *failed = Fail(inv, FailedPreconditionError("attach needs a terminal; `tpufleet logs -f " +
                                                arg + "` shows the job's output anywhere"));
    return std::nullopt;
  }
  return arg;
}

// ssh -t to `zero` running the agent's attach of job `id`.
Result<std::vector<std::string>> AttachArgv(const std::string& config, const WorkerTarget& zero,
                                            const std::string& id) {
  return SshLoginArgv(config, zero, {std::string(api::kAgentBinaryPath), "attach", id}, true);
}

}  // namespace

ExitStatus RunAttach(Invocation& inv) {
  ExitStatus failed = ExitStatus::kUsage;
  std::optional<std::string> arg = AttachArg(inv, &failed);
  if (!arg) {
    return failed;
  }
  FoundJob f = Find(inv, *arg);
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
  Result<std::vector<std::string>> argv = AttachArgv(*config, zero->target, f.job.id);
  if (!argv.ok()) {
    return Fail(inv, argv.status());
  }
  f.handle.reset();  // ssh runs without the state store
  inv.out.flush();
  inv.err.flush();
  return Fail(inv, ExecProgram(*argv));  // returns only when ssh could not be run
}

ExitStatus RunAttachOverSsh(Invocation& inv, const ServerLogins& logins) {
  ExitStatus failed = ExitStatus::kUsage;
  std::optional<std::string> arg = AttachArg(inv, &failed);
  if (!arg) {
    return failed;
  }
  // The jobs the server shows this person: a member's own (control/job_access.h).
  Result<std::vector<api::JobPlace>> jobs = JobsOnServer(inv, logins);
  if (!jobs.ok()) {
    return Fail(inv, jobs.status());
  }
  std::vector<JobRef> refs;
  for (const api::JobPlace& j : *jobs) {
    refs.push_back({j.id, j.name, JobState::kRunning, j.ended, j.created_unix_ms});
  }
  Result<size_t> found = ResolveJob(*arg, refs);
  if (!found.ok()) {
    return JobError(inv, found.status());
  }
  const api::JobPlace& job = (*jobs)[*found];
  if (job.ended) {
    return Fail(inv, FailedPreconditionError("job " + job.id + " has ended; its output: "
                                             "tpufleet logs " + job.id));
  }
  // The agent lets only the job's own user (and root) attach: its socket is theirs, 0600.
  Result<WorkerTarget> zero = ResolveOneTarget(logins.nodes, job.node + ":0");
  if (!zero.ok()) {
    return Fail(inv, zero.status());
  }
  Result<std::vector<std::string>> argv = AttachArgv(logins.ssh.config.path(), *zero, job.id);
  if (!argv.ok()) {
    return Fail(inv, argv.status());
  }
  return RunSshHere(inv, *argv);
}

}  // namespace tpufleet::cli
