#include "core/ledger.h"

#include <algorithm>
#include <chrono>

#include "core/cost.h"
#include "util/strings.h"

namespace tpufleet {

double PriceFor(const Catalog& catalog, std::string_view type, std::string_view zone,
                Capacity capacity) {
  if (capacity == Capacity::kReserved) {
    return 0;
  }
  std::optional<NodePrice> price =
      PriceNode(catalog, type, zone, capacity == Capacity::kSpot, /*hours=*/1.0);
  return price ? price->usd : 0;
}

double SpendBetween(const std::vector<SpendRecord>& stretches, Clock::WallTime from,
                    Clock::WallTime to) {
  double usd = 0;
  for (const SpendRecord& s : stretches) {
    if (!NodeState::Parse(s.state).IsBilled()) {
      continue;
    }
    Clock::WallTime start = std::max(s.start, from);
    Clock::WallTime end = std::min(s.end.value_or(to), to);
    if (end <= start) {
      continue;
    }
    double hours = std::chrono::duration<double, std::ratio<3600>>(end - start).count();
    usd += s.usd_per_hour * hours;
  }
  return usd;
}

Clock::WallTime UtcDayStart(Clock::WallTime t) {
  // system_clock counts from the Unix epoch, which is UTC midnight, without leap seconds.
  return std::chrono::floor<std::chrono::days>(t);
}

BudgetState CheckBudget(const std::optional<BudgetSpec>& budget,
                        const std::vector<SpendRecord>& stretches, Clock::WallTime now) {
  BudgetState b;
  b.spent_day = SpendBetween(stretches, UtcDayStart(now), now);
  b.spent_total = SpendBetween(stretches, Clock::WallTime::min(), now);
  for (const SpendRecord& s : stretches) {
    if (!s.end && s.start <= now && NodeState::Parse(s.state).IsBilled()) {
      b.rate_per_hour += s.usd_per_hour;
    }
  }
  if (!budget) {
    return b;
  }
  b.limit_day = budget->usd_per_day;
  b.limit_total = budget->usd_total;
  b.action = budget->action;
  std::string running = "running at " + FormatUsd(b.rate_per_hour) + "/h";
  if (b.limit_day && b.spent_day >= *b.limit_day) {
    b.reached = true;
    b.why = "usd_per_day " + FormatUsd(*b.limit_day) + " reached: " + FormatUsd(b.spent_day) +
            " spent today (UTC), " + running;
  } else if (b.limit_total && b.spent_total >= *b.limit_total) {
    b.reached = true;
    b.why = "usd_total " + FormatUsd(*b.limit_total) + " reached: " + FormatUsd(b.spent_total) +
            " spent in all, " + running;
  }
  return b;
}

}  // namespace tpufleet
