// The views of jobs (merging, listing, finding), cancel and the gang rule. Starting a
// job is jobs_start.cc; following logs and watching are jobs_follow.cc.
#include "control/jobs.h"

#include <string.h>

#include <algorithm>
#include <csignal>
#include <map>
#include <utility>

#include "control/job_access.h"
#include "control/jobs_internal.h"
#include "control/visible.h"

namespace tpufleet {
namespace {

// 128 + the number of the signal named `name` ("TERM"), or 1 for a name not known here.
int SignalExitCode(const std::string& name) {
  for (int sig = 1; sig < NSIG; ++sig) {
    const char* abbrev = ::sigabbrev_np(sig);
    if (abbrev != nullptr && name == abbrev) {
      return 128 + sig;
    }
  }
  return 1;
}

}  // namespace

namespace jobs_internal {

std::vector<WorkerOutcome> Outcomes(const JobView& job) {
  std::vector<WorkerOutcome> out;
  for (const JobWorker& w : job.workers) {
    if (!w.known) {
      continue;
    }
    const api::JobOnWorker& r = w.record;
    out.push_back(
        {"", w.target.worker, r.state, r.exit_code, r.signal, r.message, r.ended_unix_ms});
  }
  return out;
}

void Summarize(JobView& job) {
  std::vector<JobState> states;
  bool all_started = true;
  job.created_unix_ms = 0;
  job.started_unix_ms = 0;
  job.ended_unix_ms = 0;
  for (const JobWorker& w : job.workers) {
    if (!w.known) {
      continue;
    }
    const api::JobOnWorker& r = w.record;
    states.push_back(r.state);
    if (job.created_unix_ms == 0 ||
        (r.created_unix_ms != 0 && r.created_unix_ms < job.created_unix_ms)) {
      job.created_unix_ms = r.created_unix_ms;
    }
    all_started = all_started && r.started_unix_ms != 0;
    job.started_unix_ms = std::max(job.started_unix_ms, r.started_unix_ms);
    job.ended_unix_ms = std::max(job.ended_unix_ms, r.ended_unix_ms);
  }
  job.state = JobStateOf(states);
  job.ended = AllEnded(states);
  if (!all_started) {
    job.started_unix_ms = 0;
  }
  if (!job.ended) {
    job.ended_unix_ms = 0;
  }
  job.first_failure = FirstFailureLine(Outcomes(job));
}

std::vector<size_t> Indices(const JobView& job, const std::function<bool(const JobWorker&)>& pick) {
  std::vector<size_t> out;
  for (size_t i = 0; i < job.workers.size(); ++i) {
    if (pick(job.workers[i])) {
      out.push_back(i);
    }
  }
  return out;
}

Result<std::vector<AgentReply>> CallOn(World& world, const JobView& job,
                                       const std::vector<size_t>& indices, const AgentCall& call,
                                       const AgentLineFn& on_line, const AgentCancelFn& cancelled) {
  std::vector<WorkerTarget> targets;
  AgentCall as = call;
  for (size_t i : indices) {
    const WorkerTarget& t = job.workers[i].target;
    targets.push_back(t);
    // The agent shows and cancels a job to its own account and root alone: a job of
    // another account (a collaborator's, run through a team server) is asked as root.
    as.admin = as.admin || (!job.user.empty() && job.user != (t.login.empty() ? world.login
                                                                              : t.login));
  }
  return CallAgents(world, targets, as, on_line, cancelled);
}

void Update(JobWorker& w, const AgentReply& reply) {
  if (const auto* record = std::get_if<api::JobOnWorker>(&reply.body);
      reply.status.ok() && record) {
    w.record = *record;
    w.known = true;
    w.status = Status::Ok();
  } else if (const auto* list = std::get_if<std::vector<api::JobOnWorker>>(&reply.body);
             reply.status.ok() && list && !list->empty()) {
    w.record = list->back();
    w.known = true;
    w.status = Status::Ok();
  } else if (!reply.status.ok() && !w.known) {
    w.status = reply.status;
  }
}

Result<std::vector<std::string>> CancelOn(World& world, JobView& job,
                                          const std::vector<size_t>& indices,
                                          std::chrono::seconds grace, bool cold) {
  std::vector<std::string> cancelled;
  if (indices.empty()) {
    return cancelled;
  }
  AgentCall call;
  call.request.op = api::AgentOp::kJobCancel;
  call.request.id = job.id;
  call.request.grace_seconds = static_cast<int>(grace.count());
  call.cold = cold;
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<AgentReply> replies, CallOn(world, job, indices, call));
  for (size_t k = 0; k < indices.size(); ++k) {
    JobWorker& w = job.workers[indices[k]];
    Update(w, replies[k]);
    if (replies[k].status.ok()) {
      cancelled.push_back(w.target.name);
    } else {
      w.status = replies[k].status;
    }
  }
  Summarize(job);
  return cancelled;
}

Result<std::vector<WorkerTarget>> TargetWorkers(World& world,
                                                const std::vector<std::string>& targets) {
  return ResolveTargets(world.store, targets.empty() ? std::vector<std::string>{"all"} : targets);
}

JobsReport Collect(const std::vector<WorkerTarget>& workers,
                   const std::vector<AgentReply>& replies) {
  JobsReport report;
  // Each job's node (the first worker it was found on) and its record per worker.
  std::map<std::string, std::string> node_of;
  std::map<std::string, std::map<size_t, api::JobOnWorker>> records;
  for (size_t i = 0; i < workers.size(); ++i) {
    if (!replies[i].status.ok()) {
      report.missing.push_back(replies[i].status);
      continue;
    }
    const auto* list = std::get_if<std::vector<api::JobOnWorker>>(&replies[i].body);
    for (const api::JobOnWorker& r : list ? *list : std::vector<api::JobOnWorker>{}) {
      node_of.try_emplace(r.id, workers[i].node);
      if (node_of[r.id] == workers[i].node) {
        records[r.id][i] = r;
      }
    }
  }
  for (const auto& [id, node] : node_of) {
    std::vector<WorkerTarget> mine;
    std::vector<std::optional<api::JobOnWorker>> found;
    std::vector<Status> errors;
    for (size_t i = 0; i < workers.size(); ++i) {
      if (workers[i].node != node) {
        continue;
      }
      mine.push_back(workers[i]);
      auto it = records[id].find(i);
      found.push_back(it == records[id].end() ? std::nullopt
                                              : std::optional<api::JobOnWorker>(it->second));
      errors.push_back(replies[i].status.ok()
                           ? NotFoundError(workers[i].name + " has no record of job " + id)
                           : replies[i].status);
    }
    report.jobs.push_back(MergeJob(id, mine, found, errors));
  }
  std::stable_sort(report.jobs.begin(), report.jobs.end(), [](const JobView& a, const JobView& b) {
    return a.created_unix_ms > b.created_unix_ms;
  });
  return report;
}

Result<JobsReport> ListOn(World& world, const std::vector<WorkerTarget>& workers,
                          const std::vector<std::string>& ids) {
  AgentCall call;
  call.request.op = api::AgentOp::kJobList;
  call.request.ids = ids;
  call.admin = true;  // jobs.list shows a non-root caller only its own jobs
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<AgentReply> replies, CallAgents(world, workers, call));
  return Collect(workers, replies);
}

}  // namespace jobs_internal

using jobs_internal::AttachRestartable;
using jobs_internal::CancelOn;
using jobs_internal::EndJobRuns;
using jobs_internal::EndRestartable;
using jobs_internal::Indices;
using jobs_internal::ListOn;
using jobs_internal::Outcomes;
using jobs_internal::Summarize;
using jobs_internal::TargetWorkers;

JobView MergeJob(const std::string& id, const std::vector<WorkerTarget>& workers,
                 const std::vector<std::optional<api::JobOnWorker>>& found,
                 const std::vector<Status>& errors) {
  JobView job;
  job.id = id;
  for (size_t i = 0; i < workers.size(); ++i) {
    JobWorker w;
    w.target = workers[i];
    if (found[i].has_value()) {
      w.record = *found[i];
      w.known = true;
      job.restarts = std::max(job.restarts, w.record.restarts);
      if (job.name.empty()) {
        job.name = w.record.name;
        job.user = w.record.user;
        job.command = w.record.command;
        job.started_by = w.record.started_by;
        job.keep_going = w.record.keep_going;
      }
    } else {
      w.status = errors[i];
    }
    job.node = workers[i].node;
    job.workers.push_back(std::move(w));
  }
  Summarize(job);
  return job;
}

Result<JobsReport> ListJobs(World& world, const std::vector<std::string>& targets,
                            const Access& access) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> nodes, world.store.Nodes(""));
  TPUFLEET_ASSIGN_OR_RETURN(
      std::vector<WorkerTarget> workers,
      ResolveTargets(VisibleNodes(access, std::move(nodes)),
                     targets.empty() ? std::vector<std::string>{"all"} : targets));
  TPUFLEET_ASSIGN_OR_RETURN(JobsReport report, ListOn(world, workers, {}));
  TPUFLEET_TRY(EndJobRuns(world, workers, report));  // before the caller's view hides some
  std::erase_if(report.jobs, [&](const JobView& j) {
    return j.workers.empty() || !access.MaySeeJob(j.workers[0].target.fleet, j.user);
  });
  TPUFLEET_TRY(AttachRestartable(world, report));
  return report;
}

Result<JobView> FindJob(World& world, const std::string& arg, const Access& access) {
  TPUFLEET_ASSIGN_OR_RETURN(JobsReport all, ListJobs(world, {}));
  if (!access.everything()) {
    std::erase_if(all.jobs, [&](const JobView& j) { return !MaySeeJobView(access, j); });
    all.missing.clear();  // they name workers of nodes the caller may not see
  }
  std::vector<JobRef> refs;
  for (const JobView& j : all.jobs) {
    refs.push_back({j.id, j.name, j.state, j.ended, j.created_unix_ms});
  }
  Result<size_t> found = ResolveJob(arg, refs);
  if (!found.ok()) {
    if (!all.missing.empty()) {
      return Status(found.status().code(),
                    found.status().message() + " (" + std::to_string(all.missing.size()) +
                        " workers could not be asked: " + all.missing[0].message() + ")");
    }
    return found.status();
  }
  return all.jobs[*found];
}

int JobExitCode(const JobView& job) {
  if (job.state == JobState::kSucceeded) {
    return 0;
  }
  std::optional<WorkerOutcome> first = FirstFailure(Outcomes(job));
  if (first.has_value() && !first->signal.empty()) {
    return SignalExitCode(first->signal);
  }
  if (first.has_value() && first->exit_code.has_value() && *first->exit_code != 0) {
    return *first->exit_code;
  }
  return 1;
}

Result<JobView> CancelJob(World& world, const JobView& job, std::chrono::seconds grace, bool cold) {
  TPUFLEET_TRY(EndRestartable(world, job, "cancelled"));
  JobView now = job;
  std::vector<size_t> live =
      Indices(now, [](const JobWorker& w) { return !w.known || !IsEnded(w.record.state); });
  TPUFLEET_TRY(CancelOn(world, now, live, grace, cold).status());
  return now;
}

Result<std::vector<std::string>> ApplyGangRule(World& world, JobView& job, bool cold) {
  std::vector<size_t> known = Indices(job, [](const JobWorker& w) { return w.known; });
  std::vector<JobState> states;
  for (size_t i : known) {
    states.push_back(job.workers[i].record.state);
  }
  std::vector<size_t> cancel;
  for (size_t k : GangCancels(states, job.keep_going)) {
    cancel.push_back(known[k]);
  }
  return CancelOn(world, job, cancel, kDefaultCancelGrace, cold);
}

}  // namespace tpufleet
