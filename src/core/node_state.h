// NodeState: every state a node can be in as tpufleet sees it, and the questions the
// rest of tpufleet asks of one.
//
// The states come from three places:
//   - the Cloud TPU API v2 Node.State (CREATING, READY, PREEMPTED, …), what the cloud
//     says of a node;
//   - the API's QueuedResourceState (WAITING_FOR_RESOURCES, ACTIVE, FAILED, …), what it
//     says of the queued resource that makes a queued node; CREATING and DELETING are
//     spelled the same in both and are one state here;
//   - tpufleet's own record states, what the store says while the cloud has nothing to
//     say yet or any more: REQUESTED (a create was sent, its outcome unknown), QUEUED
//     (a queued resource waits for capacity), STOCKOUT (no zone had capacity),
//     NOT_FOUND (the cloud no longer lists it), DELETED (deleted to be made again), and
//     UNREACHABLE, which the ssh-hosts provider reports for a machine that does not
//     answer.
// How a record's state moves (up writes tpufleet's own states, a refresh whatever the
// cloud says, which may jump; TransitionEvent names the moves worth an event):
//   NONE -> REQUESTED (create sent) -> CREATING -> READY          a direct create
//   REQUESTED -> QUEUED (WAITING_FOR_RESOURCES…) -> READY, or FAILED   a queued one
//   REQUESTED -> STOCKOUT (no capacity there) -> REQUESTED (next zone, next up)
//   READY -> REPAIRING / STOPPING -> STOPPED -> STARTING -> READY  the cloud's own
//   READY -> PREEMPTED / TERMINATED -> DELETED (up deletes it) -> REQUESTED
//   any -> NOT_FOUND (a refresh no longer finds it) -> REQUESTED (up makes it again)
// A wire string is parsed once, where it enters tpufleet (the provider's JSON, the
// store's rows); everything else asks NodeState. A string tpufleet does not know
// (a state the API adds later, or the API's own UNKNOWN) parses to kUnknown, which keeps
// the text for display and is treated as billed and not usable.
//
// Thread-safety: a value type; the functions are pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tpufleet {

class NodeState {
 public:
  enum Value : uint8_t {
    kNone,  // "": nothing known yet (a record before its first create)
    // tpufleet's record states.
    kRequested,  // "REQUESTED": a create was sent; its outcome is not known yet
    kQueued,     // "QUEUED": its queued resource waits for capacity
    kStockout,   // "STOCKOUT": no zone had capacity; nothing exists
    kNotFound,   // "NOT_FOUND": the cloud no longer lists it
    kDeleted,    // "DELETED": deleted by up, to be made again
    kUnreachable,  // "UNREACHABLE": an ssh-hosts machine that does not answer
    // Node.State.
    kCreating,    // also QueuedResourceState CREATING
    kReady,
    kRestarting,
    kReimaging,
    kDeleting,    // also QueuedResourceState DELETING
    kRepairing,
    kStopped,
    kStopping,
    kStarting,
    kPreempted,
    kTerminated,
    kHiding,
    kHidden,
    kUnhiding,
    // QueuedResourceState.
    kAccepted,
    kProvisioning,
    kWaitingForResources,
    kActive,
    kFailed,      // also the record of a node whose queued resource FAILED
    kSuspending,
    kSuspended,
    kUnknown,  // any other text (kept: Name() returns it)
  };

  constexpr NodeState() = default;
  // Implicit, so that `state == NodeState::kReady` reads as it means.
  constexpr NodeState(Value value) : value_(value) {}  // NOLINT(google-explicit-constructor)

  /// The state the wire string names; kUnknown (keeping `wire`) when none does.
  static NodeState Parse(std::string_view wire);

  /// The wire spelling ("READY", "" for kNone), or the text kUnknown was parsed from.
  std::string Name() const;
  Value value() const { return value_; }

  /// The node costs money now (list price runs), for `status` and serve's ledger alike:
  /// from its create until it is gone, a PREEMPTED or TERMINATED husk included (it keeps
  /// its VMs' quota until deleted; SkyPilot deletes preempted TPU VMs for that reason).
  /// Not a queued resource still waiting for capacity (ACCEPTED, PROVISIONING,
  /// WAITING_FOR_RESOURCES), a STOPPED node, nor anything not made yet or deleted. A
  /// state tpufleet does not know bills.
  bool IsBilled() const;
  /// Its workers can be logged in to and run work: READY.
  bool IsUsable() const;
  /// Gone for good (spot capacity taken back, or ended): PREEMPTED or TERMINATED.
  bool IsGone() const;
  /// Must be deleted and made again to be used: gone, or its queued resource failed or
  /// was suspended.
  bool MustRecreate() const;
  /// A create was requested and its outcome is not known yet: the record's zone may
  /// hold the node (or its queued resource) any moment. REQUESTED or QUEUED.
  bool IsInFlight() const;
  /// The cloud rightly does not list it: tpufleet has not made it (yet), as in
  /// REQUESTED, QUEUED, STOCKOUT.
  bool MayBeUnlisted() const;
  /// Waiting will not make it READY: gone, stopped, or unreachable.
  bool IsHalted() const;
  /// No worker can be reached whatever its address, so connecting again cannot help:
  /// not found, gone, stopped or stopping, being deleted, or failed.
  bool IsDown() const;

  friend bool operator==(const NodeState& a, const NodeState& b) {
    return a.value_ == b.value_ && a.unknown_ == b.unknown_;
  }

 private:
  Value value_ = kNone;
  std::string unknown_;  // the text of a kUnknown
};

/// What a change of a record's state from `before` to `after`, as a refresh saw it,
/// means for the event log: "preempted" (now gone for good), "ready" (now usable),
/// "vanished" (no longer listed where the cloud should list it), or "" (nothing to log).
std::string_view TransitionEvent(const NodeState& before, const NodeState& after);

}  // namespace tpufleet
