// `tpufleet run TARGET -- COMMAND`: a job on every worker of a node, owned by the
// workers' node agents (control/jobs.h); then its logs until it ends.
#include <unistd.h>

#include <ostream>

#include "cli/app.h"
#include "cli/command.h"
#include "cli/fleet_world.h"
#include "cli/interrupt_watch.h"
#include "cli/job_output.h"
#include "control/job_access.h"
#include "control/jobs.h"
#include "util/file.h"
#include "util/strings.h"

namespace tpufleet::cli {

namespace {

constexpr char kRunUsage[] =
    "run takes a node, then `--` and the command, e.g. tpufleet run pod -- python3 train.py";

// "alice@laptop": who started the job, as `jobs` shows it; run by a team server for a
// client, "milo via lab-server" (the caller's name, the server's machine).
std::string StartedBy(const Invocation& inv) {
  auto user = inv.env.find("USER");
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) {
    host[0] = '\0';
  }
  std::string machine = host[0] == '\0' ? "unknown" : host;
  if (inv.served) {
    return inv.access.who() + " via " + machine;
  }
  // Without USER (cron, a bare `env -i`): the name of the user this runs as.
  return (user == inv.env.end() || user->second.empty() ? UserName(::geteuid()) : user->second) +
         "@" + machine;
}

// The gang watcher: `tpufleet jobs --watch ID`, detached, its notes in
// STATE/job-watchers.log.
void StartWatcher(Invocation& inv, const World& world, const std::string& id) {
  if (!inv.app.start_detached || world.paths.state_dir.empty()) {
    inv.err << "tpufleet: note: no watcher was started for job " << id
            << "; the gang rule holds while `tpufleet jobs` or `logs -f` look at it\n";
    return;
  }
  Status s = inv.app.start_detached({"jobs", "--watch", id},
                                    world.paths.state_dir + "/job-watchers.log");
  if (!s.ok()) {
    inv.err << "tpufleet: warning: the job's watcher did not start (" << s.message()
            << "); the gang rule holds while `tpufleet jobs` or `logs -f` look at it\n";
  }
}

}  // namespace

ExitStatus RunJobRun(Invocation& inv) {
  const auto& pos = inv.args.positional;
  size_t split = inv.args.after_dashdash;
  if (split == std::string::npos || split == 0 || split == pos.size()) {
    return UsageError(inv, kRunUsage);
  }
  RunRequest request;
  request.targets.assign(pos.begin(), pos.begin() + static_cast<long>(split));
  request.command = ShellJoin(std::vector<std::string>(pos.begin() + static_cast<long>(split),
                                                       pos.end()));
  request.name = inv.args.Get("name").value_or("");
  request.workdir = inv.args.Get("workdir").value_or("");
  auto env = inv.args.all_values.find("env");
  for (const std::string& e : env == inv.args.all_values.end() ? std::vector<std::string>{}
                                                                : env->second) {
    Result<std::pair<std::string, std::string>> kv = ParseEnvAssignment(e);
    if (!kv.ok()) {
      return UsageError(inv, "--env: " + kv.status().message());
    }
    request.env.push_back(*kv);
  }
  request.accelerator = !inv.args.Has("no-accelerator");
  request.no_wait = inv.args.Has("no-wait");
  request.kill_stale = inv.args.Has("kill-stale");
  if (request.kill_stale && !inv.access.everything()) {
    return UsageError(inv, "--kill-stale kills a process that may be another's: only the team "
                           "server's operator may use it");
  }
  // A collaborator's job runs as their own account (the one `users add` made), never as
  // tpufleet's login.
  request.user = inv.access.everything() ? "" : inv.access.who();
  request.keep_going = inv.args.Has("keep-going");
  request.started_by = StartedBy(inv);
  request.restart = inv.args.Get("restart").value_or("");
  if (inv.args.Has("max-restarts") && !inv.args.Has("restart")) {
    return UsageError(inv, "--max-restarts goes with --restart on-preemption|on-failure");
  }
  std::optional<double> max_restarts =
      NumberFlag(inv, "max-restarts", kDefaultMaxRestarts, 0, kMaxMaxRestarts);
  if (!max_restarts) {
    return ExitStatus::kUsage;
  }
  if (*max_restarts != static_cast<int>(*max_restarts)) {
    return UsageError(inv, "--max-restarts takes a whole number");
  }
  request.max_restarts = static_cast<int>(*max_restarts);

  Result<std::unique_ptr<WorldHandle>> handle = OpenWorld(inv, false);
  if (!handle.ok()) {
    return Fail(inv, handle.status());
  }
  World& world = (*handle)->world();
  if (Status may = CheckMayRun(world, request.targets, inv.access); !may.ok()) {
    return JobError(inv, may);
  }
  Result<const Catalog*> catalog = inv.LoadCatalog();
  if (!catalog.ok()) {
    return Fail(inv, catalog.status());
  }
  Result<JobView> job = StartJob(world, **catalog, request);
  if (!job.ok()) {
    return JobError(inv, job.status());
  }
  inv.out << job->id << std::endl;  // first, alone: what a script reads
  StartWatcher(inv, world, job->id);
  inv.err << "tpufleet: job " << job->id << " (" << job->name << ") started on " << job->node
          << " (" << job->workers.size() << (job->workers.size() == 1 ? " worker" : " workers")
          << ")";
  if (job->restartable) {
    inv.err << "; `tpufleet serve` starts it again after a preemption"
            << (job->restartable->restart == "on-failure" ? " or a failure" : "") << " (at most "
            << job->restartable->max_restarts << " times)";
  }
  if (inv.args.Has("detach")) {
    inv.err << "; follow it with: tpufleet logs -f " << job->id << std::endl;
    return ExitStatus::kOk;
  }
  inv.err << "; its logs follow (Ctrl-C detaches, the job goes on)" << std::endl;
  if (job->state == JobState::kWaiting) {
    inv.err << "tpufleet: " << DescribeJob(*job, NowUnixMs(world)) << std::endl;
  }
  InterruptWatch interrupt(inv.interrupt);
  FollowOptions follow;
  follow.follow = true;
  Result<JobView> end = PrintLogs(inv, world, *job, follow, interrupt);
  if (interrupt.Interrupted()) {
    inv.err << "tpufleet: detached from job " << job->id << ", which goes on: `tpufleet logs -f "
            << job->id << "` follows it again, `tpufleet cancel " << job->id << "` stops it"
            << std::endl;
    return ExitStatus::kInterrupted;
  }
  if (!end.ok()) {
    return Fail(inv, end.status());
  }
  if (!end->ended) {
    return Fail(inv, UnavailableError("job " + job->id +
                                      " has not ended, but its workers stopped answering: "
                                      "`tpufleet logs -f " + job->id + "` follows it again"));
  }
  inv.err << "tpufleet: job " << job->id << " " << DescribeJob(*end, NowUnixMs(world))
          << std::endl;
  return static_cast<ExitStatus>(JobExitCode(*end));
}

}  // namespace tpufleet::cli
