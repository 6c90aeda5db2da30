// What control/jobs.cc, jobs_start.cc and jobs_follow.cc share. Private to those files.
//
// Thread-safety: as jobs.h.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "control/jobs.h"

namespace tpufleet::jobs_internal {

/// The outcomes of the workers that know the job, for core/job.h's FirstFailure.
std::vector<WorkerOutcome> Outcomes(const JobView& job);

/// Recomputes the job's state, ended, times and first failure from its workers.
void Summarize(JobView& job);

/// The indices of the job's workers that `pick` chooses.
std::vector<size_t> Indices(const JobView& job, const std::function<bool(const JobWorker&)>& pick);

/// CallAgents on the job's workers at `indices`; replies in that order.
Result<std::vector<AgentReply>> CallOn(World& world, const JobView& job,
                                       const std::vector<size_t>& indices, const AgentCall& call,
                                       const AgentLineFn& on_line = {},
                                       const AgentCancelFn& cancelled = {});

/// Takes a worker's answer about the job (a JobOnWorker, or job.list's last record of
/// it) into `w`; an error is kept as its status while nothing is known of it.
void Update(JobWorker& w, const AgentReply& reply);

/// job.cancel on the job's workers at `indices`; updates the job and returns the names
/// of the workers that answered.
Result<std::vector<std::string>> CancelOn(World& world, JobView& job,
                                          const std::vector<size_t>& indices,
                                          std::chrono::seconds grace, bool cold);

/// The workers `targets` name; every worker of the fleet when there are none.
Result<std::vector<WorkerTarget>> TargetWorkers(World& world,
                                                const std::vector<std::string>& targets);

/// The jobs in job.list's `replies` from `workers`, merged per job, newest first.
JobsReport Collect(const std::vector<WorkerTarget>& workers,
                   const std::vector<AgentReply>& replies);

/// job.list (of `ids`; empty: every job) on `workers`, collected.
Result<JobsReport> ListOn(World& world, const std::vector<WorkerTarget>& workers,
                          const std::vector<std::string>& ids);

}  // namespace tpufleet::jobs_internal
