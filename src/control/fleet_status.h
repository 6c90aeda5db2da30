// Status: what tpufleet knows of its nodes, from the state store (fast, no network) or,
// with refresh, after asking each provider about every zone its nodes are in (zones
// and providers concurrently) and writing what changed back to the store: states,
// addresses, preemptions (as events) and nodes that vanished.
//
// Thread-safety: one call at a time per store.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "control/world.h"
#include "core/catalog.h"

namespace tpufleet {

struct NodeView {
  NodeRecord record;                   // as stored (after the refresh, if any)
  std::chrono::seconds age{0};         // since tpufleet asked for it
  std::optional<double> cost_usd;      // list price so far; nullopt when unknown
  bool cost_is_upper_bound = false;    // spot: the price is at most this
  std::string refresh_error;           // the provider could not be asked (refresh only)
};

struct StatusOptions {
  std::vector<std::string> nodes;  // empty: every node of every fleet
  bool refresh = false;
};

/// The nodes asked for, ordered by fleet then name. NotFound names the first unknown
/// node.
Result<std::vector<NodeView>> FleetStatus(World& world, const Catalog& catalog,
                                          const StatusOptions& options);

}  // namespace tpufleet
