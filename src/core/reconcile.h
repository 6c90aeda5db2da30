// The reconciler's decisions: what `tpufleet serve` does to one node of a spec, as a
// pure function of what one pass knows of it (the spec, the store's record, the
// provider's list, the agents' notices, the idle verdict, the ledger) and the time.
// src/reconcile gathers the facts and carries the decision out; docs/serve.md explains
// every rule to users, with the sources of its thresholds.
//
// Level-triggered: nothing here remembers the last pass. A decision depends only on the
// facts, so a serve killed at any point and started again decides the same from the
// same state, and the facts must say what earlier passes did (the record's state, a
// ttl warning already given, a node deleted on purpose).
//
// The decisions, first match wins (docs/serve.md has the same rules for users):
//   1. not serve's: not in the spec, an ssh-hosts node, or listed without a record of
//      this fleet (`import` adopts it): nothing;
//   2. deleted on purpose (ttl, idle, budget, `down`): nothing while gone, until `up`
//      makes it again (a budget-deleted node comes back once the budget allows);
//      deleted again if it is still listed;
//   3. lost: the API says PREEMPTED/TERMINATED or its queued resource failed ("api"),
//      or every one of its workers' agents says preempted while the API still says
//      READY ("agents"), or the record says it existed, its zone was listed and it is
//      not there ("vanished"): recover it from the spec (delete the husk, create, set
//      up, restart its jobs), on demand after spot_fallback's losses. Past its ttl,
//      only its husk is deleted (for the ttl); with the budget reached, its husk is
//      deleted (it bills) and the create held (kHold);
//   4. its queued resource waits: waited for (deleted when the budget is reached: it
//      would create);
//   5. there: the budget's action (delete-spot, delete-all) deletes it when it bills;
//      ttl warns logged-in users ttl_warning before creation + ttl and deletes at it;
//      idle (the verdict held for the policy's `after`, nothing in use) deletes it or
//      stops a single-host node; a STOPPED (or STOPPING) node is left alone but for its
//      ttl's delete (no warning: nobody is logged in); maintenance (an agent's notice,
//      the API's health) and unreachable workers are noted, never acted on;
//   6. not there and never made, or its recovery or create cut short (record DELETED,
//      REQUESTED long ago, STOCKOUT a while ago): create it (kHold when the budget is
//      reached); a create in flight or a recent stockout is waited for.
//
// Thread-safety: pure functions over values.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/fleet_spec.h"
#include "core/ledger.h"
#include "core/node_record.h"
#include "core/up_plan.h"
#include "core/worker_sample.h"
#include "util/clock.h"

namespace tpufleet {

/// How long before its ttl a node's logged-in users are warned (wall): long enough to
/// save work and log out, short enough to be read as urgent.
inline constexpr std::chrono::minutes kDefaultTtlWarning{5};
/// How long a create may be REQUESTED (or QUEUED) without the node or its queued resource
/// being listed before serve takes it as cut short (a killed `up` or serve) and sends it
/// again (same request id: the API makes it at most once). The API lists a node as
/// CREATING as soon as it accepts the create; two minutes cover the provider's own
/// retries of 429/5xx (capped backoff) and a list that lags.
inline constexpr std::chrono::minutes kInFlightGrace{2};
/// How long after a stockout serve tries to create the node again: SkyPilot's managed
/// jobs retry a launch 60 s apart (shared/reference/peers.md); the next try starts in the
/// zone that stocked out longest ago (core/zone_choice.h).
inline constexpr std::chrono::seconds kStockoutRetry{60};

/// What one pass knows of one node (all optional facts; level-triggered).
struct NodeFacts {
  const NodeSpec* spec = nullptr;      // nullptr: not in the spec any more (never touched)
  std::optional<NodeRecord> record;    // the store's
  bool listed = false;                 // its zone(s) were listed this pass
  std::optional<CloudSighting> cloud;  // what the list said (nullopt + listed: gone)
  std::string cloud_health;            // the API's Node.health ("UNHEALTHY_MAINTENANCE")
  std::optional<CloudSighting> queued_resource;  // its queued resource, when listed
  /// Workers of the node, and how many of them whose agent says (notice.watch) the
  /// metadata server reports preempted / a maintenance event / that cannot be reached.
  int workers = 0, workers_preempted = 0, workers_maintenance = 0, workers_unreachable = 0;
  /// The node's idle verdict has held since (IdleSince); nullopt while it does not.
  std::optional<Clock::WallTime> idle_since;
  bool in_use = false;  // a job, login or holder now (not idle)
  /// Losses (preemptions and stockouts) of this node already recorded within its
  /// spot_fallback window. The loss a kRecover is about is counted by DecideNode itself.
  int recent_losses = 0;
  /// A ttl-warned event exists for this incarnation of the node (since its creation).
  bool ttl_warned = false;
  /// Why serve or the user deleted the node on purpose, when no create followed:
  /// "ttl", "idle", "budget" (serve's delete-requested reasons) or "down". "" otherwise.
  std::string retired;
};

enum class NodeAction { kNone, kRecover, kCreate, kDelete, kStop, kWarnTtl, kHold };
/// "none", "recover", "create", "delete", "stop", "warn-ttl", "hold".
std::string_view NodeActionName(NodeAction a);

struct NodeDecision {
  NodeAction action = NodeAction::kNone;
  /// One line for logs and events: "preempted (all 4 agents' notice)", "ttl 10m
  /// reached", "idle for 2m (policy: delete after 2m)"; "" when there is nothing to say.
  std::string reason;
  /// The node was lost, and how serve knows: "api" | "agents" | "vanished" (the
  /// preempted event's signal). Set with kRecover, and with the kDelete of a husk or the
  /// kHold of a lost node while the budget is reached; "" otherwise.
  std::string signal;
  /// kDelete: why, as the delete-requested event's reason: "husk" | "ttl" | "idle" |
  /// "budget". "" for other actions.
  std::string delete_reason;
  /// "agents" | "api" while the node is under maintenance (a maintenance event once);
  /// "" otherwise. Any action can come with it.
  std::string maintenance;
  Capacity capacity{};  // for kRecover/kCreate/kHold: what to create (spot → on-demand fallback)
};

/// The decision for one node, as described at the top. `now` is serve's wall clock.
NodeDecision DecideNode(const NodeFacts& facts, const BudgetState& budget, Clock::WallTime now,
                        std::chrono::seconds ttl_warning = kDefaultTtlWarning);

/// Since when a node has been idle, in serve's clock, from its workers' window
/// summaries (index = worker; nullopt for one that did not answer) taken at the
/// workers' time `workers_now_unix_ms`: nullopt unless DiagnoseGroup's verdict is idle
/// (every worker answered and is unused; never an input-bound or straggling node);
/// else `now` minus the time since the last worker became unused, so that a skew between
/// the workers' clocks and serve's does not make a node idle early.
std::optional<Clock::WallTime> IdleSince(const std::vector<std::optional<WindowSummary>>& workers,
                                         int64_t workers_now_unix_ms, Clock::WallTime now);

}  // namespace tpufleet
