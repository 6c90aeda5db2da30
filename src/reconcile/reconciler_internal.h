// What reconciler.cc (the pass) and reconciler_actions.cc (the actions) share; not for
// other files.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "control/leftovers.h"
#include "control/wait.h"
#include "reconcile/reconciler.h"

namespace tpufleet {

// The key of a node in the reconciler's per-node maps.
inline std::string NodeKey(const std::string& fleet, const std::string& node) {
  return fleet + "/" + node;
}

struct Reconciler::Listing {
  bool this_pass = false;      // listed in the current pass
  Clock::MonoTime listed{};    // when last listed (the oldest is listed first)
  // The wall times of the last list of nodes and of the one before it: a node a list
  // shows that the one before did not was made in between (the ledger bills it from its
  // create then). nullopt: not listed yet by this serve.
  std::optional<Clock::WallTime> at, before;
  std::vector<CloudNode> nodes;
  std::vector<CloudQueuedResource> queued;
};

struct Reconciler::FleetPass {
  std::shared_ptr<const FleetSpec> spec;
  CloudProvider* provider = nullptr;
  std::vector<NodeRecord> records;  // the fleet's
  ZonesToList zones;
  BudgetState budget;
  std::vector<SpendRecord> open;    // the ledger's open stretches
  // Per node, the latest end of its closed stretches read this pass (a new stretch never
  // starts before it).
  std::map<std::string, Clock::WallTime> last_end;
  std::string ListingKey(const std::string& zone, bool queued) const {
    return std::to_string(reinterpret_cast<uintptr_t>(provider)) + " " + zone +
           (queued ? " queued" : "");
  }
};

// An action in flight on one node; the pass leaves the node to it.
class Reconciler::Action {
 public:
  explicit Action(std::string state) : shown(std::move(state)) {}
  virtual ~Action() = default;
  const std::string shown;  // what the snapshot says of the node meanwhile
};

class Reconciler::Recovering final : public Action {
 public:
  Recovering() : Action("RECOVERING") {}
  std::unique_ptr<Recovery> recovery;
};

// An action driven on the loop, one request per step: `step` makes it and arms the next
// (timer) while the action lasts. It holds the state lock, and polls with the poller's
// pauses up to up.timeout.
class Reconciler::Stepping : public Action {
 public:
  Stepping(std::string state, const UpOptions& up, EventLoop& loop, Clock& clock, LockHold lock)
      : Action(std::move(state)), loop_(loop), lock_(std::move(lock)),
        poller_(clock, up.poll_min, up.poll_max, up.timeout) {}
  ~Stepping() override { loop_.Remove(timer); }

  EventLoop& loop_;
  LockHold lock_;
  Poller poller_;
  std::function<void(Clock::MonoTime)> step;  // one request, then the next is armed
  EventLoop::Id timer = 0;
};

// A delete (control/leftovers.h's Deletion).
class Reconciler::Deleting final : public Stepping {
 public:
  Deleting(CloudProvider& provider, const std::string& zone, const std::string& node,
           bool queued, const UpOptions& up, EventLoop& loop, Clock& clock, LockHold lock)
      : Stepping("DELETING", up, loop, clock, std::move(lock)),
        deletion_(provider, zone, node, queued, poller_) {}

  Deletion deletion_;
};

// A stop: nodes.stop, then its operation polled until done.
class Reconciler::Stopping final : public Stepping {
 public:
  Stopping(const UpOptions& up, EventLoop& loop, Clock& clock, LockHold lock)
      : Stepping("STOPPING", up, loop, clock, std::move(lock)) {}

  CloudOperation op;  // "" name until the stop is requested
};

}  // namespace tpufleet
