// The Reconciler's actions: what it does about a decision (reconciler.h).
#include <algorithm>

#include "control/exec.h"
#include "control/targets.h"
#include "reconcile/reconciler.h"
#include "reconcile/reconciler_internal.h"

namespace tpufleet {

Result<LockHold> Reconciler::Lock() {
  if (LockHold held = lock_.lock()) {
    return held;
  }
  if (world_.state_lock == nullptr) {
    return LockHold(std::make_shared<UniqueFd>());  // the caller holds the lock for serve's life
  }
  TPUFLEET_ASSIGN_OR_RETURN(LockHold held, world_.state_lock->TryLock());
  lock_ = held;
  return held;
}

std::optional<LockHold> Reconciler::Begin(const std::string& fleet, const std::string& node,
                                          const std::string& kind, const std::string& detail) {
  Result<LockHold> lock = Lock();
  if (!lock.ok()) {
    Warn(node + ": waiting: " + lock.status().message());
    return std::nullopt;
  }
  if (Status s = Event(fleet, node, kind, detail); !s.ok()) {
    Warn(node + ": cannot record " + kind + ": " + s.message());
    return std::nullopt;
  }
  return *lock;
}

void Reconciler::Act(const FleetPass& fp, const std::string& node, const NodeFacts& facts,
                     const NodeDecision& d) {
  std::string key = NodeKey(fp.spec->name, node);
  if (auto until = retry_after_.find(key);
      until != retry_after_.end() && world_.clock.MonotonicNow() < until->second) {
    return;
  }
  switch (d.action) {
    case NodeAction::kNone:
      return;
    case NodeAction::kRecover:
    case NodeAction::kCreate:
      StartRecovery(fp, node, facts, d);
      return;
    case NodeAction::kDelete:
      StartDelete(fp, node, facts, d);
      return;
    case NodeAction::kWarnTtl:
      WarnTtl(fp, node, d);
      return;
    case NodeAction::kStop:
      StartStop(fp, node, facts, d);
      return;
    case NodeAction::kHold:
      // Without the amounts, which change every pass: the fleet's budget warning and
      // its budget-reached event carry them.
      Warn(node + ": " + d.reason.substr(0, d.reason.find("; not creating")) +
           "; not creating: the fleet's budget is reached");
      return;
  }
}

void Reconciler::StartRecovery(const FleetPass& fp, const std::string& node,
                               const NodeFacts& facts, const NodeDecision& d) {
  const std::string& fleet = fp.spec->name;
  Result<LockHold> lock = Lock();
  if (!lock.ok()) {
    Warn(node + ": waiting: " + lock.status().message());
    return;
  }
  bool lost = d.action == NodeAction::kRecover;
  if (lost) {
    bool vanished = d.signal == "vanished";
    Status recorded = world_.store.Transaction([&]() -> Status {
      if (facts.record) {
        // Never READY again in `status` from here: the steps make it anew.
        NodeRecord r = *facts.record;
        r.state = vanished ? NodeState::kNotFound : NodeState::kPreempted;
        r.updated_at = world_.clock.Now();
        TPUFLEET_TRY(world_.store.PutNode(r));
      }
      TPUFLEET_TRY(Event(fleet, node, "preempted",
                         "signal=" + d.signal + " workers=" + std::to_string(facts.workers)));
      TPUFLEET_TRY(Event(fleet, node, "detected",
                         std::string("reason=") + (vanished ? "vanished" : "preempted")));
      return vanished ? Status::Ok() : Event(fleet, node, "delete-requested", "reason=husk");
    });
    if (!recorded.ok()) {
      Warn(node + ": cannot record its loss: " + recorded.message());
      return;
    }
    ++counters_.preemptions;
  }
  log_(fleet, node, d.reason + (lost ? " → recovering" : " → creating"));
  RecoveryRequest request;
  request.fleet = fp.spec;
  request.node = node;
  request.force_recreate = d.signal == "agents";
  if (d.capacity != facts.spec->capacity) {
    request.capacity = d.capacity;
  }
  request.detected = world_.clock.Now();
  request.reason = d.signal == "vanished" ? "vanished" : "preempted";
  std::string key = NodeKey(fleet, node);
  auto action = std::make_unique<Recovering>();
  Result<std::unique_ptr<Recovery>> started = Recovery::Start(
      world_, catalog_, std::move(request), *lock, options_.up, loop_,
      [this, fleet, node](const std::string& m) { log_(fleet, node, m); },
      [this, key](const RecoveryOutcome& o) {
        Recovered(o);
        Ended(key, o.status);
      });
  if (!started.ok()) {
    log_(fleet, node, "could not start: " + started.status().message());
    retry_after_[key] = world_.clock.MonotonicNow() + kActionRetry;
    return;
  }
  action->recovery = std::move(*started);
  actions_[key] = std::move(action);
}

void Reconciler::Recovered(const RecoveryOutcome& o) {
  if (!o.status.ok()) {
    log_(o.fleet, o.node, "recovery failed: " + o.status.message());
    return;
  }
  ++counters_.recoveries;
  // Its jobs were just restarted: the jobs round looks again after the usual while.
  jobs_due_[NodeKey(o.fleet, o.node)] = world_.clock.MonotonicNow() + kJobCheckEvery;
  counters_.recover_seconds.push_back(o.seconds);
  log_(o.fleet, o.node, "recovered in " + std::to_string(static_cast<int>(o.seconds)) + " s" +
                            (o.jobs_resumed > 0 ? " with " + std::to_string(o.jobs_resumed) +
                                                      " job(s) resumed"
                                                : ""));
  for (const std::string& note : o.notes) {
    log_(o.fleet, o.node, note);
  }
}

// An action ended: the node is the pass's again (a failure after kActionRetry). The
// action is freed on a later turn, not from inside its own callback.
void Reconciler::Ended(const std::string& key, const Status& status) {
  if (!status.ok()) {
    retry_after_[key] = world_.clock.MonotonicNow() + kActionRetry;
  }
  auto it = actions_.find(key);
  if (it == actions_.end()) {
    return;
  }
  std::shared_ptr<Action> done(std::move(it->second));
  actions_.erase(it);
  loop_.After(std::chrono::nanoseconds::zero(), [done](Clock::MonoTime) {});
  Publish();
}

void Reconciler::StartDelete(const FleetPass& fp, const std::string& node,
                             const NodeFacts& facts, const NodeDecision& d) {
  const std::string& fleet = fp.spec->name;
  std::string zone = facts.cloud ? facts.cloud->zone
                                 : (facts.queued_resource ? facts.queued_resource->zone
                                                          : (facts.record ? facts.record->zone : ""));
  if (zone.empty()) {
    return;  // nothing known to delete
  }
  std::optional<LockHold> lock = Begin(fleet, node, "delete-requested",
                                       "reason=" + d.delete_reason);
  if (!lock) {
    return;
  }
  log_(fleet, node, d.reason + " → deleting");
  bool queued = facts.queued_resource.has_value() ||
                (facts.record && !facts.record->queued_resource.empty());
  std::string key = NodeKey(fleet, node);
  auto action = std::make_unique<Deleting>(*fp.provider, zone, node, queued, options_.up,
                                           loop_, world_.clock, *lock);
  Deleting* raw = action.get();
  std::string why = d.delete_reason;
  raw->step = [this, raw, key, fleet, node, zone, why](Clock::MonoTime now) {
    if (std::optional<Clock::MonoTime> next = raw->deletion_.Step(now)) {
      raw->timer = loop_.At(*next, [raw](Clock::MonoTime t) { raw->step(t); });
      return;
    }
    raw->timer = 0;
    Status s = raw->deletion_.result();
    if (s.ok()) {
      s = world_.store.Transaction([&]() -> Status {
        TPUFLEET_TRY(world_.store.DeleteNode(fleet, node));
        return Event(fleet, node, "deleted", "zone=" + zone + " reason=" + why);
      });
    }
    log_(fleet, node, s.ok() ? "deleted (" + why + ")" : "delete failed: " + s.message());
    Ended(key, s);  // frees the action on a later turn: this call may finish
  };
  raw->timer = loop_.After(std::chrono::nanoseconds::zero(),
                           [raw](Clock::MonoTime t) { raw->step(t); });
  actions_[key] = std::move(action);
}

void Reconciler::StartStop(const FleetPass& fp, const std::string& node,
                           const NodeFacts& facts, const NodeDecision& d) {
  const std::string& fleet = fp.spec->name;
  std::string zone = facts.cloud ? facts.cloud->zone : (facts.record ? facts.record->zone : "");
  if (zone.empty()) {
    return;  // nothing known to stop
  }
  std::optional<LockHold> lock = Begin(fleet, node, "stop-requested", "reason=idle");
  if (!lock) {
    return;
  }
  log_(fleet, node, d.reason + " → stopping");
  std::string key = NodeKey(fleet, node);
  auto action = std::make_unique<Stopping>(options_.up, loop_, world_.clock, *lock);
  Stopping* raw = action.get();
  CloudProvider* provider = fp.provider;
  raw->step = [this, raw, provider, key, fleet, node, zone](Clock::MonoTime now) {
    Result<CloudOperation> op = raw->op.name.empty() ? provider->StopNode(zone, node)
                                                     : provider->GetOperation(raw->op.name);
    Status s = op.status();
    if (op.ok()) {
      raw->op = std::move(*op);
      s = raw->op.error;
      if (!raw->op.done) {
        if (std::optional<Clock::MonoTime> next = raw->poller_.Next(now)) {
          raw->timer = loop_.At(*next, [raw](Clock::MonoTime t) { raw->step(t); });
          return;
        }
        s = TimeoutError("operation " + raw->op.name + " did not finish in time");
      }
    }
    raw->timer = 0;
    if (s.ok()) {
      s = RecordStopped(fleet, node);
    }
    log_(fleet, node, s.ok() ? "stopped (idle)" : "stop failed: " + s.message());
    Ended(key, s);  // frees the action on a later turn: this call may finish
  };
  raw->timer = loop_.After(std::chrono::nanoseconds::zero(),
                           [raw](Clock::MonoTime t) { raw->step(t); });
  actions_[key] = std::move(action);
}

// The record says STOPPED (so `status` does, and the ledger's stretch is closed by the
// next pass's listing), with a `stopped` event, both or neither.
Status Reconciler::RecordStopped(const std::string& fleet, const std::string& node) {
  return world_.store.Transaction([&]() -> Status {
    TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> records, world_.store.Nodes(fleet));
    for (NodeRecord& r : records) {
      if (r.name == node) {
        r.state = NodeState::kStopped;
        r.health.clear();
        r.updated_at = world_.clock.Now();
        TPUFLEET_TRY(world_.store.PutNode(r));
      }
    }
    return Event(fleet, node, "stopped", "reason=idle");
  });
}

namespace {

// Counts the workers whose wall ran.
class WallSink final : public FanoutSink {
 public:
  void OnOutput(size_t, OutputStream, std::string_view) override {}
  void OnResult(size_t, const HostResult& r) override { ok += r.ok() ? 1 : 0; }
  int ok = 0;
};

}  // namespace

void Reconciler::WarnTtl(const FleetPass& fp, const std::string& node, const NodeDecision& d) {
  const std::string& fleet = fp.spec->name;
  Result<std::vector<WorkerTarget>> targets = ResolveTargets(world_.store, {node});
  int warned = 0;
  size_t workers = 0;
  if (targets.ok()) {
    workers = targets->size();
    FanoutJob job = JobFor(world_, *targets);
    job.command = "wall";  // reads the message on stdin: nothing of it on a command line
    job.stdin_header = "tpufleet: this node (" + node + ") will be deleted: " + d.reason +
                       ". Save your work.\n";
    job.command_timeout = kWallTimeout;
    WallSink sink;
    if (world_.fanout.Run(job, sink).ok()) {
      warned = sink.ok;
    }
  }
  Status s = Event(fleet, node, "ttl-warned",
                   "workers=" + std::to_string(warned) + "/" + std::to_string(workers));
  if (!s.ok()) {
    Warn(node + ": cannot record the ttl warning: " + s.message());
  }
  log_(fleet, node, d.reason + " → warned the logged-in users (wall on " +
                        std::to_string(warned) + " of " + std::to_string(workers) + " workers)");
}

}  // namespace tpufleet
