#include "core/reconcile.h"

#include <algorithm>

#include "core/diagnosis.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

using std::chrono::duration_cast;
using std::chrono::seconds;
using Duration = Clock::WallTime::duration;

// The record says the node was made and tpufleet has not deleted it since: not before
// its first create, not a create in flight or stocked out, not deleted to be made again,
// not a queued resource that failed before it made anything.
bool RecordSaysExists(const NodeState& s) {
  switch (s.value()) {
    case NodeState::kNone:
    case NodeState::kRequested:
    case NodeState::kQueued:
    case NodeState::kStockout:
    case NodeState::kDeleted:
    case NodeState::kFailed:
      return false;
    default:
      return true;
  }
}

// "12m", rounded up to a whole second so that "in 0s" is never said of a future time.
std::string Span(Duration d) {
  return FormatDuration(std::chrono::ceil<seconds>(std::max(d, Duration::zero())));
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

struct Loss {
  std::string signal;  // "api" | "agents" | "vanished"
  std::string reason;
  bool husk = false;  // something is left in the cloud to delete
};

// Whether, and how, the node was lost (rule 3 of reconcile.h).
std::optional<Loss> FindLoss(const NodeFacts& f) {
  const NodeRecord& rec = *f.record;
  if (f.cloud && f.cloud->state.IsGone()) {
    return Loss{"api", Lower(f.cloud->state.Name()) + " (api: " + f.cloud->state.Name() + ")",
                true};
  }
  if (!f.cloud && f.queued_resource && f.queued_resource->state.MustRecreate()) {
    return Loss{"api", "queued resource " + f.queued_resource->state.Name() + " (api)", true};
  }
  // Unlisted this pass: the record holds what the API said last.
  if (!f.listed && rec.state.IsGone()) {
    return Loss{"api", Lower(rec.state.Name()) + " (api, as last listed)", true};
  }
  // Every agent, not some: one worker's notice alone is a glitch of its metadata server
  // or a notice that reached it first; the API or the others confirm it within seconds,
  // and deleting a pod on one worker's word would kill a healthy run.
  bool api_ready = f.cloud ? f.cloud->state.IsUsable() : rec.state.IsUsable();
  if (f.workers > 0 && f.workers_preempted == f.workers && api_ready) {
    return Loss{"agents",
                "preempted (all " + std::to_string(f.workers) + " agents' notice; api READY)",
                true};
  }
  if (f.listed && !f.cloud && !f.queued_resource && RecordSaysExists(rec.state)) {
    return Loss{
        "vanished",
        "vanished (recorded " + rec.state.Name() + " in " + rec.zone + ", no longer listed there)",
        false};
  }
  return std::nullopt;
}

// What to create: the spec's capacity, or on demand once a spot node has been lost
// spot_fallback.after times within its window. Appends why to `reason`.
Capacity CreateCapacity(const NodeSpec& spec, int losses, std::string* reason) {
  if (spec.capacity == Capacity::kSpot && spec.spot_fallback &&
      losses >= spec.spot_fallback->after) {
    *reason += "; on demand: " + std::to_string(losses) + " losses within " +
               FormatDuration(spec.spot_fallback->within) + " (spot_fallback after " +
               std::to_string(spec.spot_fallback->after) + ")";
    return Capacity::kOnDemand;
  }
  return spec.capacity;
}

NodeDecision Delete(std::string why, std::string reason, NodeDecision d) {
  d.action = NodeAction::kDelete;
  d.delete_reason = std::move(why);
  d.reason = std::move(reason);
  return d;
}

// A lost node (rule 3): recovered, unless its ttl has run out (its husk is deleted for
// the ttl, so it stays deleted) or the budget is spent (its husk is deleted, the create
// held).
NodeDecision Lost(const NodeSpec& spec, const NodeFacts& f, const Loss& loss,
                  const BudgetState& budget, Clock::WallTime now, NodeDecision d) {
  d.signal = loss.signal;
  if (spec.ttl && now >= f.record->created_at + *spec.ttl) {
    std::string ttl = "ttl " + FormatDuration(*spec.ttl) + " reached";
    if (loss.husk) {
      return Delete("ttl", loss.reason + "; deleting the husk, not recreating: " + ttl, d);
    }
    d.reason = loss.reason + "; not recreating: " + ttl;
    return d;
  }
  if (budget.reached) {
    if (loss.husk) {
      return Delete("husk", loss.reason + "; deleting the husk, not recreating: " + budget.why, d);
    }
    d.action = NodeAction::kHold;
    d.reason = loss.reason + "; not recreating: " + budget.why;
    return d;
  }
  // The loss being decided is not recorded yet: count it.
  d.action = NodeAction::kRecover;
  d.reason = loss.reason;
  d.capacity = CreateCapacity(spec, f.recent_losses + 1, &d.reason);
  return d;
}

NodeDecision Create(const NodeSpec& spec, const NodeFacts& f, const BudgetState& budget,
                    std::string reason, NodeDecision d) {
  d.capacity = CreateCapacity(spec, f.recent_losses, &reason);
  if (budget.reached) {
    d.action = NodeAction::kHold;
    d.reason = reason + "; not creating: " + budget.why;
  } else {
    d.action = NodeAction::kCreate;
    d.reason = std::move(reason);
  }
  return d;
}

// A node not in the cloud and not lost: made for the first time, made again after a
// create or recovery that was cut short, or waited for (rule 4).
NodeDecision NotThere(const NodeSpec& spec, const NodeFacts& f, const BudgetState& budget,
                      Clock::WallTime now, NodeDecision d) {
  if (!f.record || f.record->state == NodeState::kNone) {
    return Create(spec, f, budget, "not created yet", d);
  }
  const NodeRecord& rec = *f.record;
  Duration since = now - rec.updated_at;
  switch (rec.state.value()) {
    case NodeState::kDeleted:
      return Create(spec, f, budget, "deleted to be made again; creating it", d);
    case NodeState::kFailed:
      return Create(spec, f, budget, "its queued resource failed; creating it again", d);
    case NodeState::kStockout:
      if (since >= kStockoutRetry) {
        return Create(spec, f, budget, "stocked out " + Span(since) + " ago; trying again", d);
      }
      d.reason = "stocked out; next try in " + Span(kStockoutRetry - since);
      return d;
    default:  // REQUESTED or QUEUED: RecordSaysExists covers the rest
      if (since >= kInFlightGrace) {
        return Create(spec, f, budget,
                      "create cut short (" + rec.state.Name() + " " + Span(since) +
                          " ago, not listed); sending it again",
                      d);
      }
      d.reason = "create in flight (" + rec.state.Name() + ")";
      return d;
  }
}

// The budget's delete of a node that bills (rule 5).
bool BudgetDeletes(const BudgetState& budget, const NodeRecord& rec, const NodeState& state) {
  if (!budget.reached || !state.IsBilled()) {
    return false;
  }
  switch (budget.action) {
    case BudgetAction::kStopCreating:
      return false;
    case BudgetAction::kDeleteSpot:
      return rec.capacity == CapacityName(Capacity::kSpot);
    case BudgetAction::kDeleteAll:
      return true;
  }
  return false;
}

// A node that is there and was not lost: the budget, its ttl and its idle policy
// (rules 5 to 8).
NodeDecision There(const NodeSpec& spec, const NodeFacts& f, const BudgetState& budget,
                   Clock::WallTime now, seconds ttl_warning, NodeDecision d) {
  const NodeRecord& rec = *f.record;
  NodeState state = f.cloud ? f.cloud->state : rec.state;
  if (state == NodeState::kDeleting) {
    d.reason = "being deleted";
    return d;
  }
  if (BudgetDeletes(budget, rec, state)) {
    return Delete("budget", budget.why + " → " + std::string(BudgetActionName(budget.action)), d);
  }
  // Stopped (by its idle policy, or by hand): nobody is logged in to warn, and nothing
  // else is done to it until someone starts it.
  bool stopped = state == NodeState::kStopped || state == NodeState::kStopping;
  if (spec.ttl) {
    Clock::WallTime deadline = rec.created_at + *spec.ttl;
    if (now >= deadline) {
      return Delete("ttl", "ttl " + FormatDuration(*spec.ttl) + " reached", d);
    }
    if (now >= deadline - ttl_warning && !f.ttl_warned && !stopped) {
      d.action = NodeAction::kWarnTtl;
      d.reason = "ttl " + FormatDuration(*spec.ttl) + ": deleting in " + Span(deadline - now);
      return d;
    }
  }
  if (stopped) {
    d.reason = Lower(state.Name()) + ": left alone until started (`tpufleet up` starts it)";
    return d;
  }
  if (spec.idle && f.idle_since && !f.in_use && now - *f.idle_since >= spec.idle->after &&
      state.IsUsable()) {
    std::string idle = "idle for " + Span(now - *f.idle_since) +
                       " (policy: " + std::string(IdleActionName(spec.idle->action)) + " after " +
                       FormatDuration(spec.idle->after) + ")";
    if (spec.idle->action == IdleAction::kDelete) {
      return Delete("idle", idle, d);
    }
    if (spec.workers > 1) {  // the parser refuses this; a pod is never stopped
      d.reason = idle + ", but a TPU pod cannot be stopped";
      return d;
    }
    d.action = NodeAction::kStop;
    d.reason = idle;
    return d;
  }
  if (f.workers_preempted > 0) {
    d.reason = "preempted per " + std::to_string(f.workers_preempted) + " of " +
               std::to_string(f.workers) + " agents: waiting for the API or the rest to confirm";
  } else if (f.workers > 0 && f.workers_unreachable == f.workers) {
    d.reason = "all " + std::to_string(f.workers) +
               " workers unreachable (not recreated: a cut network is not a preemption)";
  } else if (!d.maintenance.empty()) {
    d.reason = "under maintenance (" + d.maintenance + "): waiting, not recreating";
  }
  return d;
}

}  // namespace

std::string_view NodeActionName(NodeAction a) {
  switch (a) {
    case NodeAction::kNone:
      return "none";
    case NodeAction::kRecover:
      return "recover";
    case NodeAction::kCreate:
      return "create";
    case NodeAction::kDelete:
      return "delete";
    case NodeAction::kStop:
      return "stop";
    case NodeAction::kWarnTtl:
      return "warn-ttl";
    case NodeAction::kHold:
      return "hold";
  }
  return "?";
}

NodeDecision DecideNode(const NodeFacts& f, const BudgetState& budget, Clock::WallTime now,
                        seconds ttl_warning) {
  NodeDecision d;
  if (f.spec == nullptr) {
    d.reason = "not in the spec: left alone";
    return d;
  }
  const NodeSpec& spec = *f.spec;
  if (!spec.hosts.empty()) {
    return d;  // ssh-hosts: tpufleet never creates or deletes those machines
  }
  d.capacity = spec.capacity;
  if (f.workers_maintenance > 0) {
    d.maintenance = "agents";
  } else if (f.cloud && f.cloud_health == "UNHEALTHY_MAINTENANCE") {
    d.maintenance = "api";
  }
  bool present = f.cloud || f.queued_resource;
  if (present && (!f.record || (f.cloud && f.cloud->fleet_label != f.record->fleet))) {
    d.reason = "listed in " + (f.cloud ? f.cloud->zone : f.queued_resource->zone) +
               " but not made by this fleet's records (`tpufleet import` adopts it): left alone";
    return d;
  }
  if (!f.retired.empty()) {
    bool comes_back = f.retired == "budget" && !budget.reached;
    if (comes_back && !present) {
      return Create(spec, f, budget, "deleted at the budget, which allows it again", d);
    }
    if (!comes_back) {
      if (!present) {
        d.reason = "deleted (" + f.retired + "); `tpufleet up` makes it again";
      } else if (f.retired == "down" || (f.cloud && f.cloud->state == NodeState::kDeleting)) {
        d.reason = "being deleted (" + f.retired + ")";
      } else {
        return Delete(f.retired, "deleted (" + f.retired + ") but still listed: deleting again", d);
      }
      return d;
    }
  }
  if (f.record) {
    if (std::optional<Loss> loss = FindLoss(f)) {
      return Lost(spec, f, *loss, budget, now, d);
    }
  }
  if (f.queued_resource && !f.cloud) {
    // Waiting for capacity: it bills nothing yet, but would create.
    if (budget.reached) {
      return Delete(
          "budget",
          "queued resource " + f.queued_resource->state.Name() + " would create: " + budget.why, d);
    }
    d.reason = "queued (" + f.queued_resource->state.Name() + ")";
    return d;
  }
  if (f.cloud || (!f.listed && f.record && RecordSaysExists(f.record->state))) {
    return There(spec, f, budget, now, ttl_warning, d);
  }
  if (f.listed) {
    return NotThere(spec, f, budget, now, d);
  }
  return d;  // not listed this pass and not known to exist: wait for a listing
}

std::optional<Clock::WallTime> IdleSince(const std::vector<std::optional<WindowSummary>>& workers,
                                         int64_t workers_now_unix_ms, Clock::WallTime now) {
  if (workers.empty() ||
      DiagnoseGroup(workers, workers_now_unix_ms, std::chrono::milliseconds(0)).verdict !=
          Verdict::kIdle) {
    return std::nullopt;
  }
  int64_t since = 0;  // the group is unused since its most recently used worker stopped
  for (const std::optional<WindowSummary>& w : workers) {
    since = std::max(since, w->idle_since_unix_ms);
  }
  return now - std::chrono::milliseconds(std::max<int64_t>(0, workers_now_unix_ms - since));
}

}  // namespace tpufleet
