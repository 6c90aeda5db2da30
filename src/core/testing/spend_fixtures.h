// Ledger stretches for the tests of core's ledger, spend report and goodput.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "core/node_record.h"

namespace tpufleet::testing {

/// A stretch of `fleet`/`node` (of `type`) in `state`, billed to `owner`.
inline SpendRecord LedgerStretch(std::string fleet, std::string node, std::string type,
                                 std::string owner, std::string state, double usd_per_hour,
                                 Clock::WallTime start, std::optional<Clock::WallTime> end) {
  SpendRecord s;
  s.fleet = std::move(fleet);
  s.node = std::move(node);
  s.type = std::move(type);
  s.owner = std::move(owner);
  s.state = std::move(state);
  s.usd_per_hour = usd_per_hour;
  s.start = start;
  s.end = end;
  return s;
}

}  // namespace tpufleet::testing
