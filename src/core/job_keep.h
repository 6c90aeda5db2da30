// What `tpufleet serve` does about one restartable job (`run --restart`, a JobRecord the
// store says is "active") on a node that is up and answering, from what the node's
// agents say of it now: a pure function, as core/reconcile.h's DecideNode is for nodes.
//
// A node's recovery restarts its jobs itself (reconcile/recovery.h). This is for the
// rest, checked level-triggered by serve's jobs round (reconcile/reconciler.h):
//   - the job is not on the node's workers (the node was made again, and the serve that
//     made it was killed before it restarted the job): restart it;
//   - it runs, waits or is starting: nothing;
//   - it succeeded: the record is done (serve stops looking at it);
//   - it was cancelled or lost: not by `tpufleet cancel`, which ends the record first,
//     so by the machine: its workers rebooted (maintenance; the reboot's SIGTERM is
//     the keeper's cancel, a SIGKILL loses it): restart it;
//   - it failed: under on-failure, restart it; under on-preemption, restart it only when
//     the node was under maintenance since the job last started (the reboot killed it),
//     else the record is done (a job's own failure is not restarted).
// RestartJob (control/jobs.h) counts the restarts and gives up at max_restarts.
//
// Thread-safety: pure functions over values.
#pragma once

#include <string>

#include "core/job.h"
#include "core/node_record.h"

namespace tpufleet {

enum class JobKeepAction { kNone, kRestart, kDone };

struct JobKeepDecision {
  JobKeepAction action = JobKeepAction::kNone;
  /// kRestart: the job record's last_reason ("maintenance (cancelled by the reboot)");
  /// kDone: why it ends ("succeeded"). "" for kNone.
  std::string reason;
};

/// What the node's agents said of the job (every worker answered).
struct JobSighting {
  bool known = false;  // some worker's agent has the job
  JobState state = JobState::kLost;  // JobStateOf its workers, when known
  std::string first_failure;  // JobView's "w2 failed first: exit 1", when failed
};

/// The decision for `job` (REQUIRES: job.state == "active"), as described at the top.
/// `maintenance_since_start`: a maintenance of the node was recorded after the job's
/// last start (its record's updated_at).
JobKeepDecision DecideJob(const JobRecord& job, const JobSighting& seen,
                          bool maintenance_since_start);

}  // namespace tpufleet
