// The Reconciler's metrics round (reconciler.h): each node's idle verdict from its
// agents' windows, and its usage added to the store (`cost --goodput`), every
// metrics_every.
#include <algorithm>

#include "control/fleet_metrics.h"
#include "control/targets.h"
#include "core/diagnosis.h"
#include "core/goodput.h"
#include "reconcile/reconciler_internal.h"

namespace tpufleet {

// The idle verdicts of the nodes whose spec has an idle policy, and every node's usage.
// A round blocks the loop for as long as its slowest worker: for usage alone, a node
// is asked only while every worker's agent answers (a cut-off one would cost the
// call's timeout); an idle verdict needs the silent ones too (they keep it from idle).
void Reconciler::MetricsRound() {
  std::vector<std::string> names;
  for (const std::shared_ptr<const FleetSpec>& fleet : fleets_) {
    for (const NodeSpec& ns : fleet->nodes) {
      for (const std::string& n : ns.names) {
        NodeNotices heard = notices_.Of(fleet->name, n);
        if (actions_.count(NodeKey(fleet->name, n)) == 0 && heard.workers > 0 &&
            (ns.idle || heard.answering == heard.workers)) {
          names.push_back(n);
        }
      }
    }
  }
  if (names.empty()) {
    return;
  }
  Result<std::vector<WorkerTarget>> targets = ResolveTargets(world_.store, names);
  if (!targets.ok()) {
    Warn("metrics round: " + targets.status().message());
    return;
  }
  Result<FleetMetrics> round = SampleFleet(world_, *targets, MetricsOptions{});
  if (!round.ok()) {
    Warn("metrics round: " + round.status().message());
    return;
  }
  Clock::WallTime now = world_.clock.Now();
  for (const GroupMetrics& g : round->nodes) {
    std::vector<std::optional<WindowSummary>> windows;
    int64_t workers_now = 0;
    bool in_use = false;
    std::string fleet;
    for (size_t i : g.workers) {
      const WorkerMetrics& w = round->workers[i];
      fleet = w.target.fleet;
      if (w.report) {
        windows.push_back(w.report->window);
        workers_now = std::max(workers_now, w.report->sample.time_unix_ms);
        in_use = in_use || w.report->window.idle_since_unix_ms == 0;
      } else {
        windows.push_back(std::nullopt);
      }
    }
    std::string key = NodeKey(fleet, g.name);
    idle_since_[key] = IdleSince(windows, workers_now, now);
    in_use_[key] = in_use;
    AddUsage(fleet, g.name, windows, now);
  }
}

// From where the last round left off (read from the store once after a restart), never
// before the agents' window: a gap in the rounds stays unmeasured.
void Reconciler::AddUsage(const std::string& fleet, const std::string& node,
                          const std::vector<std::optional<WindowSummary>>& windows,
                          Clock::WallTime now) {
  std::string key = NodeKey(fleet, node);
  Clock::WallTime from = now - kDiagnosisWindow;
  if (auto it = usage_until_.find(key); it != usage_until_.end()) {
    from = std::max(from, it->second);
  } else if (Result<std::vector<UsageRecord>> rows = world_.store.Usage(fleet, from); rows.ok()) {
    for (const UsageRecord& u : *rows) {
      if (u.node == node) {
        from = std::max(from, u.measured_until);
      }
    }
  }
  std::vector<UsageRecord> usage = MeasureUsage(fleet, node, windows, from, now);
  Status added = world_.store.Transaction([&]() -> Status {
    for (const UsageRecord& u : usage) {
      TPUFLEET_TRY(world_.store.AddUsage(u));
    }
    return Status::Ok();
  });
  if (!added.ok()) {
    Warn(node + ": cannot add its usage: " + added.message());
    return;
  }
  if (!usage.empty()) {
    usage_until_[key] = now;
  }
}

}  // namespace tpufleet
