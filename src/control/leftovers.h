// Leftovers: what tpufleet made and no longer wants, deleted or else remembered until
// the cloud lets it go.
//
// A create can leave a resource behind in a zone: a stockout whose node stays (Cloud
// TPU sometimes keeps one), or a create that a later one superseded. It bills, holds
// quota and holds the node's id in that zone. Whoever finds one deletes it at once and,
// when that fails, records it in the store (Store::PutLeftover) before moving on, so a
// failed delete or a kill never loses it. FinishLeftovers retries the recorded ones:
// `up` and `down` call it before anything else (the reconciler will too), and `status`
// shows what is left (fleet_status.h).
//
// Untracked nodes are the other half: a node that carries a fleet's label
// (kFleetLabel) but has no record and is no leftover. tpufleet never deletes one on its
// own; `up` and `status --refresh` report it (FindUntracked).
//
// Thread-safety: the functions may run concurrently over one World; FinishLeftovers
// drives every leftover's Deletion from one event loop on the caller's thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "control/progress.h"
#include "control/wait.h"
#include "control/world.h"

namespace tpufleet {

/// The GCP label on every node tpufleet creates: the fleet it belongs to.
inline constexpr char kFleetLabel[] = "tpufleet-fleet";

/// How long deleting one resource may take and how often to look.
struct DeleteOptions {
  std::chrono::seconds timeout{std::chrono::minutes(15)};  // per resource
  std::chrono::milliseconds poll_min{250};
  std::chrono::milliseconds poll_max{std::chrono::seconds(2)};
};

/// Deleting node `name` in `zone` (when `queued`, its queued resource first, with force)
/// until the cloud has let it go, as steps a loop drives: each Step makes one request
/// and never sleeps. Waits (an operation, a node still DELETING) take the poller's
/// pauses and end at its deadline. The provider and poller must outlive it.
class Deletion {
 public:
  Deletion(CloudProvider& provider, std::string zone, std::string name, bool queued,
           Poller& poller);

  /// Makes the next request; returns when the next Step is due (perhaps `now`), or
  /// nullopt once the deletion is over and result() says how: OK when the node is gone
  /// (or was gone already).
  std::optional<Clock::MonoTime> Step(Clock::MonoTime now);
  const Status& result() const { return result_; }

 private:
  enum class Stage { kQueued, kOperation, kLook };
  std::optional<Clock::MonoTime> Wait(CloudOperation op, Clock::MonoTime now);
  std::optional<Clock::MonoTime> Finish(Status status);

  CloudProvider& provider_;
  const std::string zone_;
  const std::string name_;
  Poller& poller_;
  Stage stage_;
  CloudOperation op_;  // kOperation: the operation polled
  Status result_;
};

/// A Deletion run to its end on the poller's clock (sleeping between steps).
Status DeleteAndWait(CloudProvider& provider, const std::string& zone, const std::string& name,
                     bool queued, Poller& poller);

/// Records `leftover` and a "leftover" event, for FinishLeftovers. REQUIRES: inside a
/// Store::Transaction body, so that both are written or neither, in the same step as
/// the record that moves away from the leftover's zone.
Status RememberLeftover(World& world, const LeftoverRecord& leftover);

struct LeftoverOutcome {
  LeftoverRecord leftover;  // as stored, last_error from this attempt
  Status status;            // OK: gone and forgotten; else it stays recorded
};

/// Deletes every recorded leftover of `fleet` ("" = every fleet), concurrently (their
/// Deletions on one event loop, no thread of their own); each one
/// the cloud confirms gone is forgotten (with a "leftover-deleted" event), each failure
/// is kept with its error for the next try. Progress is reported as node
/// "NAME (leftover)". The Status is an error only when the store cannot be read.
Result<std::vector<LeftoverOutcome>> FinishLeftovers(World& world, std::string_view fleet,
                                                     const DeleteOptions& options,
                                                     ProgressObserver& progress);

/// A node in the cloud that carries a fleet's label but that tpufleet has no record of.
struct UntrackedNode {
  std::string fleet;    // the label's value
  std::string project;  // from its cloud name
  std::string name;
  std::string zone;
  NodeState state;
  std::string recorded_zone;  // a record of the same name is in this zone: a duplicate
};

/// The nodes of `cloud` labelled with one of `fleets` that match no record (fleet, name,
/// zone) of `records` and no leftover. ssh-hosts machines carry no labels, so never.
std::vector<UntrackedNode> FindUntracked(const std::vector<CloudNode>& cloud,
                                         const std::vector<std::string>& fleets,
                                         const std::vector<NodeRecord>& records,
                                         const std::vector<LeftoverRecord>& leftovers);

/// The one line that says what to do about an untracked node.
std::string UntrackedMessage(const UntrackedNode& node);

}  // namespace tpufleet
