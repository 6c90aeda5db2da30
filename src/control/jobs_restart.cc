// Restartable jobs: what `run --restart` keeps in the store, RestartJob (serve's), and
// the store's side of `jobs` and `cancel` (the restartable records and the jobs' runs).
#include <algorithm>

#include "control/jobs.h"
#include "control/jobs_internal.h"
#include "control/node_history.h"

namespace tpufleet {
namespace {

using jobs_internal::OneWholeNode;
using jobs_internal::StartChecked;
using jobs_internal::TopologyOf;

constexpr char kActive[] = "active";

// Stores `job` as changed now, with the event `kind` (job=ID restarts=N), in one step.
Status PutWithEvent(World& world, JobRecord& job, const std::string& kind) {
  job.updated_at = world.clock.Now();
  return world.store.Transaction([&]() -> Status {
    TPUFLEET_TRY(world.store.PutJob(job));
    return world.store.AddEvent({0, job.updated_at, job.fleet, job.node, kind,
                                 "job=" + job.id + " restarts=" + std::to_string(job.restarts)});
  });
}

}  // namespace

namespace jobs_internal {

bool Restarts(const std::string& restart) {
  return !restart.empty() && restart != "never";
}

Status CheckRestart(const std::string& restart, int max_restarts) {
  if (!restart.empty() && restart != "never" && restart != "on-preemption" &&
      restart != "on-failure") {
    return InvalidArgumentError("--restart: \"" + restart +
                                "\" is not a policy; one of on-preemption, on-failure, never");
  }
  if (max_restarts < 0 || max_restarts > kMaxMaxRestarts) {
    return InvalidArgumentError("--max-restarts: " + std::to_string(max_restarts) +
                                " is not between 0 and " + std::to_string(kMaxMaxRestarts));
  }
  return Status::Ok();
}

Result<JobRecord> KeepRestartable(World& world, const NodeRecord& node, api::JobSpec spec,
                                  const RunRequest& request) {
  JobRecord job;
  job.fleet = node.fleet;
  job.node = node.name;
  job.id = spec.id;
  job.name = spec.name;
  // The node's workers of the time are the restart's to fill: a recreated node has new
  // addresses.
  spec.topology = JobTopology{};
  spec.worker = 0;
  spec.pty = false;
  job.spec_json = api::ToJson(spec);
  job.restart = request.restart;
  job.max_restarts = request.max_restarts;
  job.state = kActive;
  job.created_at = world.clock.Now();
  job.updated_at = job.created_at;
  TPUFLEET_TRY(world.store.PutJob(job));
  return job;
}

Status AttachRestartable(World& world, JobsReport& report) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<JobRecord> kept, world.store.Jobs(""));
  for (JobView& view : report.jobs) {
    for (const JobRecord& r : kept) {
      if (r.id != view.id || r.node != view.node) {
        continue;
      }
      view.restarts = std::max(view.restarts, r.restarts);
      view.restartable = r;
      TPUFLEET_ASSIGN_OR_RETURN(NodeHistory h, ReadNodeHistory(world.store, r.fleet, r.node));
      if (h.last_recovered && *h.last_recovered >= r.created_at) {
        view.time_to_recover_seconds = h.time_to_recover_seconds;
      }
    }
  }
  return Status::Ok();
}

Status EndJobRuns(World& world, const std::vector<WorkerTarget>& asked, const JobsReport& report) {
  Clock::WallTime now = world.clock.Now();
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<JobRunRecord> open, world.store.JobRuns("", now));
  std::erase_if(open, [&](const JobRunRecord& run) {
    return run.end.has_value() ||
           std::none_of(asked.begin(), asked.end(), [&](const WorkerTarget& t) {
             return t.fleet == run.fleet && t.node == run.node;
           });
  });
  if (open.empty()) {
    return Status::Ok();
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<JobRecord> kept, world.store.Jobs(""));
  for (JobRunRecord& run : open) {
    if (std::any_of(kept.begin(), kept.end(), [&](const JobRecord& k) {
          return k.fleet == run.fleet && k.node == run.node && k.id == run.id &&
                 k.state == kActive;
        })) {
      continue;
    }
    auto view = std::find_if(report.jobs.begin(), report.jobs.end(), [&](const JobView& v) {
      return v.id == run.id && v.node == run.node && !v.workers.empty() &&
             v.workers[0].target.fleet == run.fleet;
    });
    if (view != report.jobs.end()) {
      if (!view->ended) {
        continue;
      }
      // The workers' clock, never before the run's start by this machine's.
      run.end = view->ended_unix_ms == 0
                    ? now
                    : std::max(run.start,
                               Clock::WallTime(std::chrono::milliseconds(view->ended_unix_ms)));
    } else if (report.missing.empty()) {
      run.end = now;
    } else {
      continue;  // an unanswering worker may still run it
    }
    TPUFLEET_TRY(world.store.PutJobRun(run));
  }
  return Status::Ok();
}

Status EndRestartable(World& world, const JobView& view, const std::string& reason) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<JobRecord> kept, world.store.Jobs(""));
  for (JobRecord& r : kept) {
    if (r.id == view.id && r.node == view.node && r.state == kActive) {
      r.state = "done";
      r.last_reason = reason;
      r.updated_at = world.clock.Now();
      TPUFLEET_TRY(world.store.PutJob(r));
    }
  }
  return Status::Ok();
}

}  // namespace jobs_internal

Result<JobView> RestartJob(World& world, const Catalog& catalog, JobRecord& job,
                           const std::string& reason) {
  if (job.state != kActive) {
    return FailedPreconditionError("job " + job.id + " is " + job.state +
                                   ", not active: it is not restarted");
  }
  if (job.restarts >= job.max_restarts) {
    job.state = "gave-up";
    job.last_reason = reason;
    TPUFLEET_TRY(PutWithEvent(world, job, "job-gave-up"));
    return FailedPreconditionError("job " + job.id + " (" + job.name + ") gave up: " + reason +
                                   " after " + std::to_string(job.restarts) +
                                   " restarts, its limit (--max-restarts)");
  }
  TPUFLEET_ASSIGN_OR_RETURN(api::JobSpec spec, api::ParseJobSpec(job.spec_json));
  NodeRecord record;
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<WorkerTarget> workers,
                            OneWholeNode(world, {job.node}, &record));
  if (record.fleet != job.fleet) {
    return NotFoundError("job " + job.id + "'s node " + job.node + " is not in fleet " + job.fleet +
                         " any more");
  }
  TPUFLEET_ASSIGN_OR_RETURN(spec.topology, TopologyOf(catalog, record, workers));
  spec.restarts = job.restarts + 1;
  AgentCall call;
  call.request.op = api::AgentOp::kJobStart;
  call.request.job = spec;
  TPUFLEET_ASSIGN_OR_RETURN(JobView view, StartChecked(world, workers, call));
  job.restarts = spec.restarts;
  job.last_reason = reason;
  TPUFLEET_TRY(PutWithEvent(world, job, "job-resumed"));
  view.restarts = job.restarts;
  view.restartable = job;
  return view;
}

}  // namespace tpufleet
