// What up.cc (doing) and up_plan.cc (planning) share; not for other files.
#pragma once

#include <vector>

#include "control/world.h"
#include "core/zone_choice.h"

namespace tpufleet::up_internal {

/// The stockouts within kStockoutMemory, from the store's events.
std::vector<Stockout> RecentStockouts(World& world);

}  // namespace tpufleet::up_internal
