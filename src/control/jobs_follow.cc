// FollowJob (`logs`, `run`) and WatchJob (the gang watcher): streaming calls that keep
// the job's view current from the agents' state lines and apply the gang rule.
#include <algorithm>
#include <utility>

#include "control/jobs.h"
#include "control/jobs_internal.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

using jobs_internal::CallOn;
using jobs_internal::Indices;
using jobs_internal::ListOn;
using jobs_internal::Summarize;

// Applies the gang rule to the job as known now (cold: this may run inside another
// call's callback), telling `note` what it stopped.
void Gang(World& world, JobView& job, const JobNoteFn& note) {
  Result<std::vector<std::string>> stopped = ApplyGangRule(world, job, true);
  if (!stopped.ok()) {
    note("job " + job.id + ": " + job.first_failure + "; stopping the other workers failed: " +
         stopped.status().message());
  } else if (!stopped->empty()) {
    note("job " + job.id + ": " + job.first_failure + "; stopped it on " +
         Join(*stopped, ", "));
  }
}

// Takes a state line of worker `w` into the job, then the gang rule.
void TakeState(World& world, JobView& job, JobWorker& w, const api::JobOnWorker& state,
               const JobNoteFn& note) {
  w.record = state;
  w.known = true;
  w.status = Status::Ok();
  Summarize(job);
  Gang(world, job, note);
}

// Asks the job's workers for its records again (job.list of its id).
Status Refresh(World& world, JobView& job) {
  std::vector<WorkerTarget> targets;
  for (const JobWorker& w : job.workers) {
    targets.push_back(w.target);
  }
  TPUFLEET_ASSIGN_OR_RETURN(JobsReport now, ListOn(world, targets, {job.id}));
  for (JobView& fresh : now.jobs) {
    if (fresh.id == job.id) {
      job = std::move(fresh);
      return Status::Ok();
    }
  }
  return NotFoundError("no worker has a record of job " + job.id + " any more");
}

}  // namespace

Result<JobView> FollowJob(World& world, JobView job, const FollowOptions& options,
                          const JobOutputFn& output, const JobNoteFn& note,
                          const AgentCancelFn& cancelled) {
  std::vector<size_t> which = Indices(job, [&](const JobWorker& w) {
    return !options.worker.has_value() || w.target.worker == *options.worker;
  });
  if (which.empty()) {
    return InvalidArgumentError("job " + job.id + " has no worker " +
                                std::to_string(*options.worker) + ": it runs on " +
                                std::to_string(job.workers.size()) + " workers of " + job.node +
                                " (0-" + std::to_string(job.workers.size() - 1) + ")");
  }
  AgentCall call;
  call.request.op = api::AgentOp::kJobLogs;
  call.request.id = job.id;
  call.request.tail = options.tail;
  call.request.follow = options.follow;
  auto on_line = [&](size_t k, const api::AgentLine& line) {
    JobWorker& w = job.workers[which[k]];
    if (line.kind == api::AgentLine::Kind::kData) {
      output(w, line.chunk.stream, line.chunk.data);
    } else if (options.follow) {
      TakeState(world, job, w, line.state, note);
    }
  };
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<AgentReply> replies,
                            CallOn(world, job, which, call, on_line, cancelled));
  bool stopped = cancelled && cancelled();
  for (const AgentReply& r : replies) {
    if (!r.status.ok() && !stopped) {
      note(r.status.message());
    }
  }
  if (options.follow && !stopped) {
    // The last state lines may have raced the end: the records say how it ended.
    Status fresh = Refresh(world, job);
    if (!fresh.ok()) {
      note(fresh.message());
    }
  }
  return job;
}

Status WatchJob(World& world, const std::string& id, const JobNoteFn& note) {
  Clock::MonoTime last_answer = world.clock.MonotonicNow();
  std::optional<JobView> job;
  while (true) {
    bool answered = false;
    if (!job.has_value()) {
      TPUFLEET_ASSIGN_OR_RETURN(JobsReport all, ListJobs(world, {}));
      for (JobView& j : all.jobs) {
        if (j.id == id) {
          job = std::move(j);
        }
      }
      if (!job.has_value() && all.missing.empty()) {
        return NotFoundError("no worker has a job " + id);
      }
      answered = job.has_value();
    }
    if (job.has_value()) {
      Gang(world, *job, note);  // a worker may have failed before the watch began
      if (job->ended) {
        note("job " + id + " ended: " + std::string(api::JobStateName(job->state)));
        return Status::Ok();
      }
      AgentCall call;
      call.request.op = api::AgentOp::kJobWatch;
      call.request.ids = {id};
      // A worker that answered without a record of the job has nothing to watch.
      std::vector<size_t> live = Indices(*job, [](const JobWorker& w) {
        return w.known ? !IsEnded(w.record.state) : w.status.code() != StatusCode::kNotFound;
      });
      auto on_line = [&](size_t k, const api::AgentLine& line) {
        if (line.kind == api::AgentLine::Kind::kState) {
          TakeState(world, *job, job->workers[live[k]], line.state, note);
        }
      };
      TPUFLEET_ASSIGN_OR_RETURN(std::vector<AgentReply> replies,
                                CallOn(world, *job, live, call, on_line));
      for (const AgentReply& r : replies) {
        answered = answered || r.answered;
        if (!r.status.ok()) {
          note("job " + id + ": " + r.status.message());
        }
      }
      if (Refresh(world, *job).ok() && job->ended) {
        continue;  // the top of the loop applies the rule once more and says so
      }
    }
    if (job.has_value() &&
        ResolveTargets(world.store, {job->node}).status().code() == StatusCode::kNotFound) {
      return NotFoundError("node " + job->node + " of job " + id +
                           " is gone (down); the watcher ends");
    }
    Clock::MonoTime now = world.clock.MonotonicNow();
    if (answered) {
      last_answer = now;
    } else if (now - last_answer > kWatchGiveUp) {
      return UnavailableError("no worker of job " + id + " answered for " +
                              FormatDuration(kWatchGiveUp) + "; the watcher gives up");
    }
    world.clock.SleepFor(kWatchRetryDelay);
  }
}

}  // namespace tpufleet
