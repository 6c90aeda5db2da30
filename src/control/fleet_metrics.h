// FleetMetrics: what the node agents of some workers measure now, in one round, and the
// verdicts on it: `tpufleet top` draws it, `jobs` and `status` take their verdicts from it.
//
// One round is one CallAgents (control/agent_client.h) with the `metrics` op to every
// worker at once, over the connections tpufleet keeps; each worker's result is its
// agent's MetricsReport (core/worker_sample.h) or why there is none (unreachable, no
// agent, timeout: the reply's status, naming the worker). The verdicts are computed here,
// on this machine, from the agents' window summaries (core/diagnosis.h): DiagnoseWorker
// per worker, DiagnoseGroup per node (all its workers asked) and per job (the workers
// whose sample names the job as running or holding a chip, plus the node's workers that
// did not answer, which may run it too).
//
// Thread-safety: as World's members; runs on the calling thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "control/agent_client.h"
#include "control/targets.h"
#include "control/world.h"
#include "core/diagnosis.h"
#include "core/worker_sample.h"
#include "util/status.h"

namespace tpufleet {

/// A metrics answer is a snapshot the agent already holds (its sampler thread takes the
/// samples): it answers within milliseconds; this much covers a loaded worker and the
/// round trip without letting one stuck worker hold up a refresh of the others for long.
inline constexpr std::chrono::seconds kMetricsCallTimeout{5};
/// A worker not logged in within this is not waited for: a round of the live view must
/// not take the fan-out's 10 s for each worker that is cut off (the holder keeps the
/// others' connections warm, and a fresh login takes well under a second).
inline constexpr std::chrono::seconds kMetricsConnectTimeout{5};

/// One worker's answer, and its verdict.
struct WorkerMetrics {
  WorkerTarget target;
  /// What its agent answered; nullopt when it did not (then `status` says why).
  std::optional<MetricsReport> report;
  Status status;
  /// DiagnoseWorker of report->window; kUnknown with status' message when no report.
  Diagnosis diagnosis;
};

/// A node's or a job's workers and their verdict.
struct GroupMetrics {
  std::string name;     // the node's name, or the job's id
  std::string node;     // the node (for a job: the node it runs on)
  std::string user;     // a job's user, from its JobSample ("" for a node)
  std::vector<size_t> workers;  // indices into FleetMetrics::workers, in their order
  Diagnosis diagnosis;  // DiagnoseGroup over `workers`; Diagnosis::worker is a worker index
};

/// One round over some workers.
struct FleetMetrics {
  int64_t now_unix_ms = 0;             // this machine's clock when the round ended
  std::vector<WorkerMetrics> workers;  // in the order asked (ResolveTargets': node, worker)
  std::vector<GroupMetrics> nodes;     // in the order of their first worker
  std::vector<GroupMetrics> jobs;      // ordered by node, then id
};

/// How to ask and judge.
struct MetricsOptions {
  MetricsQuery query;  // history to ask for (default: none)
  std::chrono::milliseconds idle_after = kDefaultIdleAfter;  // DiagnoseWorker/Group's
  std::chrono::milliseconds timeout = kMetricsCallTimeout;    // per worker
  std::chrono::milliseconds connect_timeout = kMetricsConnectTimeout;
};

/// The verdicts on `workers` (their targets, reports and statuses set; the diagnoses are
/// filled in here) as of `now_unix_ms`: the workers' own, then the groups of nodes and
/// of jobs (see the file comment). Pure.
FleetMetrics JudgeFleet(std::vector<WorkerMetrics> workers, int64_t now_unix_ms,
                        std::chrono::milliseconds idle_after = kDefaultIdleAfter);

/// One metrics round on `workers` (not empty), judged. Errors only when the round cannot
/// start (CallAgents'); a worker that does not answer, or answers an error, is a
/// WorkerMetrics without report. `cancelled` as CallAgents' (the live view's `q`):
/// the workers not done then are Unavailable "cancelled".
Result<FleetMetrics> SampleFleet(World& world, const std::vector<WorkerTarget>& workers,
                                 const MetricsOptions& options,
                                 const AgentCancelFn& cancelled = {});

/// The group of job `id` in `fleet`; null when no answering worker runs it.
const GroupMetrics* FindJobGroup(const FleetMetrics& fleet, const std::string& id);
/// The group of node `name` in `fleet`; null when none of its workers was asked.
const GroupMetrics* FindNodeGroup(const FleetMetrics& fleet, const std::string& name);

}  // namespace tpufleet
