// What up.cc (doing) and up_plan.cc (planning) share; not for other files.
#pragma once

#include <string>
#include <vector>

#include "control/world.h"
#include "core/fleet_spec.h"
#include "core/zone_choice.h"
#include "store/store.h"

namespace tpufleet::up_internal {

/// The node is gone for good (spot capacity taken back, or ended).
bool IsGone(const std::string& state);

/// A create was requested and its outcome is not known yet: the record's zone may hold
/// the node (or its queued resource) any moment.
bool IsInFlight(const std::string& state);

/// The digest of what a node is made of; a change means the node no longer matches.
std::string SpecDigest(const NodeSpec& n);

/// The stockouts within kStockoutMemory, from the store's events.
std::vector<Stockout> RecentStockouts(World& world);

/// `zones` without those that hold a leftover of node `name`.
std::vector<std::string> WithoutLeftovers(const std::vector<std::string>& zones,
                                          const std::string& name,
                                          const std::vector<LeftoverRecord>& leftovers);

}  // namespace tpufleet::up_internal
