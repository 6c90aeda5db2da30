// Status: what tpufleet knows of its nodes, from the state store (fast, no network) or,
// with refresh, after asking each provider about every zone its nodes are in (zones
// and providers concurrently) and writing what changed back to the store: states,
// addresses, preemptions (as events) and nodes that vanished.
//
// Each node's state is shown as ShownState (node_history.h) has it: never READY once the
// event log has it preempted since; with its last time-to-recover, the serve keeping the
// state (if any) and how old the states are.
//
// It shows the leftovers too (leftovers.h: what tpufleet made and still has to delete),
// with what they cost so far; refresh forgets a leftover node the cloud no longer
// lists. With refresh, every node in the zones it lists that carries the label of a
// fleet in the store and has no record is reported as untracked.
//
// Thread-safety: one call at a time per store.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "control/access.h"
#include "control/leftovers.h"
#include "control/node_history.h"
#include "control/world.h"
#include "core/catalog.h"

namespace tpufleet {

struct NodeView {
  NodeRecord record;                   // as stored (after the refresh, if any)
  std::string state;                   // what to show: ShownState (node_history.h)
  std::optional<double> time_to_recover_seconds;  // of its last recovery, if any
  std::chrono::seconds age{0};         // since tpufleet asked for it
  std::optional<double> cost_usd;      // list price so far; nullopt when unknown
  bool cost_is_upper_bound = false;    // spot: the price is at most this
  std::string refresh_error;           // the provider could not be asked (refresh only)
};

struct LeftoverView {
  LeftoverRecord record;
  std::chrono::seconds age{0};       // since tpufleet asked for it
  std::optional<double> cost_usd;    // list price so far; nullopt when unknown
  bool cost_is_upper_bound = false;  // spot: the price is at most this
};

struct FleetStatusReport {
  std::vector<NodeView> nodes;           // ordered by fleet then name
  std::vector<LeftoverView> leftovers;   // of the nodes asked for (all: every one)
  std::vector<UntrackedNode> untracked;  // refresh only
  ServeState serve;                      // the serve keeping this state, if any
  /// How old the nodes' states are: since the last serve pass while serve runs, else
  /// since the least recently updated node was (0 with refresh, or without nodes).
  std::chrono::seconds states_age{0};
};

struct StatusOptions {
  std::vector<std::string> nodes;  // empty: every node of every fleet
  bool refresh = false;
  /// Who asks (visible.h): the nodes they may not see are not there for them (naming
  /// one is NotFound as for an unknown name, and a refresh leaves it alone); leftovers
  /// and untracked nodes show only to an admin of their fleet.
  Access access = Access::Everything("local");
};

/// The nodes asked for, ordered by fleet then name, with the leftovers of the same
/// names (every leftover when no node is named). NotFound names the first unknown node.
Result<FleetStatusReport> FleetStatus(World& world, const Catalog& catalog,
                                      const StatusOptions& options);

/// Takes the workers' addresses the cloud lists for `cloud` into `r`'s workers (a stop
/// and start or a maintenance moves them; the host keys stay pinned); true when one
/// changed. serve's pass does this for the nodes it lists, as a refresh does.
bool TakeAddresses(const CloudNode& cloud, NodeRecord& r);

/// Refreshes `nodes` (names; each once) as `status --refresh` does them: asks their
/// providers, records what changed (state, addresses, as events too) and rewrites the
/// SSH files; returns their records after it, ordered by name. NotFound names an
/// unknown node; Unavailable when a provider could not be asked (nothing of its nodes
/// is changed then). Writes go onto each record as it is at the time of the write, so a
/// command changing the fleet meanwhile (up) loses nothing; no state lock is taken.
Result<std::vector<NodeRecord>> RefreshNodes(World& world, const std::vector<std::string>& nodes);

}  // namespace tpufleet
