// The Reconciler's jobs round (reconciler.h, step 5): a node's restartable jobs kept
// going outside its recoveries, as core/job_keep.h decides, and its jobs' runs ended
// when the agents say they ended (the ledger's share per job, core/spend_report.h).
#include <algorithm>

#include "control/jobs.h"
#include "core/job_keep.h"
#include "reconcile/reconciler.h"
#include "reconcile/reconciler_internal.h"

namespace tpufleet {
namespace {

// Whether a maintenance of the node was recorded after `since` (the job's last start).
bool MaintenanceSince(Store& store, const std::string& fleet, const std::string& node,
                      Clock::WallTime since) {
  EventQuery q;
  q.fleet = fleet;
  q.node = node;
  q.kind = "maintenance";
  q.since = since;
  q.limit = 1;
  Result<std::vector<EventRecord>> found = store.Events(q);
  return found.ok() && !found->empty();
}

}  // namespace

void Reconciler::KeepJobs(const std::string& fleet, const std::string& node) {
  std::string key = NodeKey(fleet, node);
  Clock::MonoTime mono = world_.clock.MonotonicNow();
  if (auto due = jobs_due_.find(key); due != jobs_due_.end() && mono < due->second) {
    return;
  }
  jobs_due_[key] = mono + kJobCheckEvery;
  auto active = [&]() -> Result<std::vector<JobRecord>> {
    TPUFLEET_ASSIGN_OR_RETURN(std::vector<JobRecord> kept, world_.store.Jobs(fleet));
    std::erase_if(kept, [&](const JobRecord& j) { return j.node != node || j.state != "active"; });
    return kept;
  };
  Result<std::vector<JobRecord>> before = active();
  if (!before.ok()) {
    Warn(node + ": cannot read its restartable jobs: " + before.status().message());
    return;
  }
  // A job run without --restart is asked after too while its run is open: listing it
  // ends the run when the agents say it ended (control/jobs.h ListJobs).
  Result<std::vector<JobRunRecord>> runs = world_.store.JobRuns(fleet, world_.clock.Now());
  bool running = runs.ok() && std::any_of(runs->begin(), runs->end(), [&](const JobRunRecord& r) {
                   return r.node == node && !r.end;
                 });
  if (before->empty() && !running) {
    return;
  }
  Result<JobsReport> report = ListJobs(world_, {node});
  if (!report.ok() || !report->missing.empty()) {
    jobs_due_[key] = mono + kJobCheckRetry;  // a worker still rebooting: soon again
    return;
  }
  // Read again after the agents answered: `cancel` ends a record before it stops the
  // job, so a job cancelled meanwhile is not active here and not started again.
  Result<std::vector<JobRecord>> jobs = active();
  if (!jobs.ok()) {
    return;
  }
  for (JobRecord& job : *jobs) {
    auto view = std::find_if(report->jobs.begin(), report->jobs.end(),
                             [&](const JobView& v) { return v.id == job.id; });
    JobSighting seen;
    if (view != report->jobs.end()) {
      if (view->state == JobState::kFailed && !view->ended) {
        // The gang rule first (as `jobs` applies it); the job is decided once it ended.
        if (Result<std::vector<std::string>> r = ApplyGangRule(world_, *view); !r.ok()) {
          Warn(node + ": job " + job.id + ": " + r.status().message());
        }
        jobs_due_[key] = mono + kJobCheckRetry;
        continue;
      }
      seen = {true, view->state, view->first_failure};
      // A restart the agents ran and the store missed (serve killed between the two):
      // the next restart counts on from it, as the agents refuse a count they had.
      job.restarts = std::max(job.restarts, view->restarts);
    }
    JobKeepDecision d =
        DecideJob(job, seen, MaintenanceSince(world_.store, fleet, node, job.updated_at));
    if (d.action == JobKeepAction::kDone) {
      job.state = "done";
      job.last_reason = d.reason;
      job.updated_at = world_.clock.Now();
      Status s = world_.store.Transaction([&]() -> Status {
        TPUFLEET_TRY(world_.store.PutJob(job));
        return Event(fleet, node, "job-done", "job=" + job.id);
      });
      log_(fleet, node, "job " + job.id + " (" + job.name + ") " + d.reason +
                            (s.ok() ? ": no longer kept" : ": cannot record it: " + s.message()));
    } else if (d.action == JobKeepAction::kRestart) {
      Result<JobView> restarted = RestartJob(world_, catalog_, job, d.reason);
      log_(fleet, node,
           "job " + job.id + " (" + job.name + "): " + d.reason +
               (restarted.ok() ? " → resumed, restart " + std::to_string(job.restarts)
                               : " → not restarted: " + restarted.status().message()));
    }
  }
}

}  // namespace tpufleet
