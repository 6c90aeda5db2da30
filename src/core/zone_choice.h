// Which zone `up` tries first: the spec's candidate zones, in the spec's order, except
// that zones where the same accelerator type stocked out recently go last (the one that
// stocked out longest ago first among them). The memory comes from the state store's
// stockout events, so the next `up` (or the reconciler) starts where capacity was
// last seen rather than hammering an empty zone.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "util/clock.h"

namespace tpufleet {

/// How long a stockout counts against a zone. Cloud TPU capacity moves in hours, and
/// an hour keeps a retry loop from returning to the same empty zone at once.
inline constexpr std::chrono::hours kStockoutMemory{1};

/// One recorded stockout of `type` in `zone`.
struct Stockout {
  std::string type;
  std::string zone;
  Clock::WallTime time{};
};

/// `candidates` reordered for `type` as described above. Stockouts older than `memory`
/// or of other types are ignored; every candidate appears exactly once.
std::vector<std::string> OrderZones(const std::vector<std::string>& candidates,
                                    const std::string& type,
                                    const std::vector<Stockout>& stockouts, Clock::WallTime now,
                                    std::chrono::seconds memory = kStockoutMemory);

}  // namespace tpufleet
