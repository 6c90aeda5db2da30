// What control/jobs.cc, jobs_start.cc, jobs_restart.cc and jobs_follow.cc share. Private to those
// files.
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

/// The workers of the one node `targets` names, all of them, with its record; or why
/// not (InvalidArgument: no node, several nodes, some of a node's workers).
Result<std::vector<WorkerTarget>> OneWholeNode(World& world,
                                               const std::vector<std::string>& targets,
                                               NodeRecord* record);

/// The node's topology: its type from the catalog (none for a machine of no TPU type)
/// and its workers' addresses.
Result<JobTopology> TopologyOf(const Catalog& catalog, const NodeRecord& record,
                               const std::vector<WorkerTarget>& workers);

/// job.start of `call`'s job on every worker of `workers` (a whole node): first a dry
/// run everywhere (any refusal starts nothing), then the start; a gang that does not
/// start whole is cancelled where it started, and the error says where it failed.
Result<JobView> StartChecked(World& world, const std::vector<WorkerTarget>& workers,
                             AgentCall call);

/// OK when `restart` is a policy `run --restart` takes ("", never, on-preemption,
/// on-failure) and `max_restarts` is in [0, kMaxMaxRestarts]; InvalidArgument otherwise.
Status CheckRestart(const std::string& restart, int max_restarts);

/// Whether the policy asks for restarts (not "" or "never").
bool Restarts(const std::string& restart);

/// Stores the job `spec` (as sent to worker 0) on `node` as restartable, with
/// `request`'s policy; returns the record stored.
Result<JobRecord> KeepRestartable(World& world, const NodeRecord& node, api::JobSpec spec,
                                  const RunRequest& request);

/// Gives each job of `report` that the store keeps as restartable its record, and the
/// larger of the workers' and the store's restarts.
Status AttachRestartable(World& world, JobsReport& report);

/// The store's runs (store: job_runs) of the jobs on `asked`'s nodes that `report` shows
/// ended end when they did; those that no agent of their node knows any more (a node
/// recreated under a job that is not restarted) end now, when every worker answered. An
/// active restartable job's run goes on: serve starts it again under its id.
Status EndJobRuns(World& world, const std::vector<WorkerTarget>& asked, const JobsReport& report);

/// Ends the store's record of `view` when it is active ("done", `reason`): serve does
/// not start it again. OK when there is none.
Status EndRestartable(World& world, const JobView& view, const std::string& reason);

}  // namespace tpufleet::jobs_internal
