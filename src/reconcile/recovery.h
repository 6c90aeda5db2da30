// Recovery: serve bringing one node back to its spec — a preempted node's husk deleted and
// the node made again, a vanished node made again, or a node left half-made by a killed
// serve or `up` finished — then its restartable jobs started again.
//
// It is `up`'s own node steps (control/up_steps.h) for that one node, on serve's event
// loop: the plan is PlanUp's (control/up.h: the cloud listed for the fleet, the records,
// the leftovers, the stockout memory), so what a killed serve left behind resumes as a
// killed `up` does (the recorded zone and request id first); and when serve knows more
// than the cloud says (every agent's notice says preempted while the API still says
// READY) the node's plan is made a recreate of it. The steps then delete the husk
// (it holds quota), create in the best zone with failover, wait for READY and the host
// keys, put the keys on, check and install the agent, make the accounts, run setup.
// The steps' progress is recorded as the events `agent-up` and `setup-done`; the jobs'
// restarts as `job-resumed` (or `job-gave-up`); the end as `recovered` with the seconds
// since serve detected the loss.
//
// The caller (the Reconciler) has taken the state lock and recorded `preempted`,
// `detected` and `delete-requested` before it starts one; the lock is held (the
// LockHold) until the recovery ends.
//
// Thread-safety: none; serve's loop thread starts it and the loop advances it.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "control/progress.h"
#include "control/up.h"
#include "control/world.h"
#include "core/catalog.h"
#include "core/fleet_spec.h"
#include "util/event_loop.h"
#include "util/unique_fd.h"

namespace tpufleet {

namespace up_internal {
class UpSteps;
}

/// serve's hold of the state lock, shared by every action in flight: the first takes
/// it, the last to end lets it go (flock is per open file, so two of serve's own
/// actions could not each take it).
using LockHold = StateHold;

/// How one recovery went.
struct RecoveryOutcome {
  std::string fleet, node;
  Status status;                  // OK when the node is READY and set up
  int jobs_resumed = 0;
  std::vector<std::string> notes;  // per job that could not be restarted, one line each
  /// Seconds from detection to the last job resumed (or setup done): the `recovered`
  /// event's, when status is OK.
  double seconds = 0;
};

struct RecoveryRequest {
  std::shared_ptr<const FleetSpec> fleet;  // kept alive while the steps run
  std::string node;
  /// Recreate the node even where the cloud shows it usable (the agents' notice).
  bool force_recreate = false;
  /// Create with this capacity instead of the spec's (the spot fallback), when set.
  std::optional<Capacity> capacity;
  Clock::WallTime detected{};  // when serve decided: the recovery's time counts from it
  /// "preempted", "vanished", …: the `last_reason` of the jobs it restarts.
  std::string reason = "preempted";
};

class Recovery {
 public:
  using Log = std::function<void(const std::string& message)>;
  using Done = std::function<void(const RecoveryOutcome& outcome)>;

  /// Plans the node and starts its steps on `loop`; `done` runs on the loop once the
  /// node is up (or failed) and its jobs were restarted. Errors when nothing could be
  /// started (the cloud unreadable, no provider, no key): then `done` never runs.
  /// REQUIRES: `world`, `catalog`, `options` and `loop` outlive the recovery.
  static Result<std::unique_ptr<Recovery>> Start(World& world, const Catalog& catalog,
                                                 RecoveryRequest request, LockHold lock,
                                                 const UpOptions& options, EventLoop& loop,
                                                 Log log, Done done);
  ~Recovery();
  Recovery(const Recovery&) = delete;
  Recovery& operator=(const Recovery&) = delete;

  const std::string& node() const { return request_.node; }
  const std::string& fleet() const { return request_.fleet->name; }

 private:
  class Progress;

  Recovery(World& world, const Catalog& catalog, RecoveryRequest request, LockHold lock,
           EventLoop& loop, Log log, Done done);
  // Starts the node's active restartable jobs again (after its steps succeeded).
  void RestartJobs(RecoveryOutcome& out);
  // The steps are done: restart the jobs, record the end, hand over the outcome.
  void Finish();
  Status Event(const std::string& kind, const std::string& detail);

  World& world_;
  const Catalog& catalog_;
  RecoveryRequest request_;
  LockHold lock_;
  EventLoop& loop_;
  Log log_;
  Done done_;
  NodeSpec spec_;                 // the node's spec, with the fallback capacity
  std::vector<NodePlan> plans_;   // the one plan the steps follow
  std::unique_ptr<Progress> progress_;
  std::optional<FleetKey> key_;
  std::unique_ptr<up_internal::UpSteps> steps_;
  EventLoop::Id watch_ = 0;       // the turn-end hook that sees the steps end
  bool finished_ = false;
};

}  // namespace tpufleet
