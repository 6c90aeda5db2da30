#include "core/node_state.h"

#include <array>
#include <utility>

namespace tpufleet {
namespace {

// Every named state and its wire spelling, in Value order.
constexpr std::array<std::pair<NodeState::Value, std::string_view>, NodeState::kUnknown>
    kNames = {{
        {NodeState::kNone, ""},
        {NodeState::kRequested, "REQUESTED"},
        {NodeState::kQueued, "QUEUED"},
        {NodeState::kStockout, "STOCKOUT"},
        {NodeState::kNotFound, "NOT_FOUND"},
        {NodeState::kDeleted, "DELETED"},
        {NodeState::kUnreachable, "UNREACHABLE"},
        {NodeState::kCreating, "CREATING"},
        {NodeState::kReady, "READY"},
        {NodeState::kRestarting, "RESTARTING"},
        {NodeState::kReimaging, "REIMAGING"},
        {NodeState::kDeleting, "DELETING"},
        {NodeState::kRepairing, "REPAIRING"},
        {NodeState::kStopped, "STOPPED"},
        {NodeState::kStopping, "STOPPING"},
        {NodeState::kStarting, "STARTING"},
        {NodeState::kPreempted, "PREEMPTED"},
        {NodeState::kTerminated, "TERMINATED"},
        {NodeState::kHiding, "HIDING"},
        {NodeState::kHidden, "HIDDEN"},
        {NodeState::kUnhiding, "UNHIDING"},
        {NodeState::kAccepted, "ACCEPTED"},
        {NodeState::kProvisioning, "PROVISIONING"},
        {NodeState::kWaitingForResources, "WAITING_FOR_RESOURCES"},
        {NodeState::kActive, "ACTIVE"},
        {NodeState::kFailed, "FAILED"},
        {NodeState::kSuspending, "SUSPENDING"},
        {NodeState::kSuspended, "SUSPENDED"},
    }};

// kNames is indexed by Value: a state added to the enum and not here fails to build.
constexpr bool NamesInOrder() {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i].first != i) {
      return false;
    }
  }
  return true;
}
static_assert(NamesInOrder(), "kNames must list every state but kUnknown, in enum order");

}  // namespace

NodeState NodeState::Parse(std::string_view wire) {
  for (const auto& [value, name] : kNames) {
    if (name == wire) {
      return value;
    }
  }
  NodeState s(kUnknown);
  s.unknown_ = std::string(wire);
  return s;
}

std::string NodeState::Name() const {
  return value_ == kUnknown ? unknown_ : std::string(kNames[value_].second);
}

bool NodeState::IsBilled() const {
  switch (value_) {
    case kNone:
    case kRequested:
    case kQueued:
    case kAccepted:
    case kProvisioning:
    case kWaitingForResources:
    case kStockout:
    case kNotFound:
    case kDeleted:
    case kStopped:
    case kFailed:
    case kSuspended:
      return false;
    default:
      // A PREEMPTED or TERMINATED husk too, and kUnknown: better to overstate a cost
      // than to hide one.
      return true;
  }
}

bool NodeState::IsUsable() const { return value_ == kReady; }

bool NodeState::IsGone() const { return value_ == kPreempted || value_ == kTerminated; }

bool NodeState::MustRecreate() const {
  return IsGone() || value_ == kFailed || value_ == kSuspended || value_ == kSuspending;
}

bool NodeState::IsInFlight() const { return value_ == kRequested || value_ == kQueued; }

bool NodeState::MayBeUnlisted() const {
  return value_ == kRequested || value_ == kQueued || value_ == kStockout;
}

bool NodeState::IsHalted() const {
  return IsGone() || value_ == kStopped || value_ == kUnreachable;
}

bool NodeState::IsDown() const {
  return IsGone() || value_ == kNotFound || value_ == kStopped || value_ == kStopping ||
         value_ == kDeleting || value_ == kFailed;
}

std::string_view TransitionEvent(const NodeState& before, const NodeState& after) {
  if (before == after) {
    return "";
  }
  if (after == NodeState::kNotFound) {
    return "vanished";
  }
  if (after.IsGone()) {
    return "preempted";
  }
  return after.IsUsable() ? "ready" : "";
}

}  // namespace tpufleet
