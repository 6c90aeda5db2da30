#include "core/ledger.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cost.h"
#include "core/testing/catalog_fixtures.h"
#include "core/testing/spend_fixtures.h"

namespace tpufleet {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

// 15:00 UTC on 26 November 2026.
const Clock::WallTime kLedgerNow =
    std::chrono::sys_days{std::chrono::year{2026} / 11 / 26} + std::chrono::hours(15);
const Clock::WallTime kMidnight = std::chrono::sys_days{std::chrono::year{2026} / 11 / 26};

constexpr double kV4_8 = 12.88;  // v4-8 on demand in us-central2: 4 chips x $3.22

SpendRecord Stretch(std::string state, double usd_per_hour, Clock::WallTime start,
                    std::optional<Clock::WallTime> end) {
  SpendRecord s = testing::LedgerStretch("lab", "trainer", "v4-8", "", std::move(state),
                                         usd_per_hour, start, end);
  s.zone = "us-central2-b";
  s.capacity = "on-demand";
  return s;
}

TEST(LedgerTest, PriceFor) {
  const Catalog& catalog = testing::BuiltinCatalog();
  EXPECT_NEAR(PriceFor(catalog, "v4-8", "us-central2-b", Capacity::kOnDemand), kV4_8, 1e-9);
  // v4 has one spot price: 4 chips x $0.9215.
  EXPECT_NEAR(PriceFor(catalog, "v4-8", "us-central2-b", Capacity::kSpot), 3.686, 1e-9);
  // v5e spot varies by region ($0.2449 to $0.60 a chip of $1.20): the top of the range,
  // half the list price, even where it is cheaper.
  EXPECT_NEAR(PriceFor(catalog, "v5litepod-8", "us-central1-a", Capacity::kSpot), 4.80, 1e-9);
  EXPECT_EQ(PriceFor(catalog, "v4-8", "us-central2-b", Capacity::kReserved), 0);
  // Same as what `up` and `status` show.
  EXPECT_EQ(PriceFor(catalog, "v4-32", "us-central2-b", Capacity::kSpot),
            PriceNode(catalog, "v4-32", "us-central2-b", true, 1.0)->usd);
  // No such type, no price for the region: 0 (the caller says so).
  EXPECT_EQ(PriceFor(catalog, "v9-8", "us-central2-b", Capacity::kOnDemand), 0);
  EXPECT_EQ(PriceFor(catalog, "v4-8", "antarctica-south1-a", Capacity::kOnDemand), 0);
  EXPECT_EQ(PriceFor(catalog, "", "us-central2-b", Capacity::kOnDemand), 0);
}

TEST(LedgerTest, SpendBetweenCountsOverlapOnly) {
  std::vector<SpendRecord> s = {
      Stretch("READY", kV4_8, kLedgerNow - hours(3), kLedgerNow - hours(1)),  // 2 h, all inside
  };
  EXPECT_NEAR(SpendBetween(s, kLedgerNow - hours(5), kLedgerNow), 2 * kV4_8, 1e-9);
  // Half an hour of it falls in the span.
  EXPECT_NEAR(SpendBetween(s, kLedgerNow - minutes(90), kLedgerNow), 0.5 * kV4_8, 1e-9);
  EXPECT_NEAR(SpendBetween(s, kLedgerNow - hours(4), kLedgerNow - minutes(150)), 0.5 * kV4_8, 1e-9);
  // Before or after the span: nothing.
  EXPECT_EQ(SpendBetween(s, kLedgerNow - hours(1), kLedgerNow), 0);
  EXPECT_EQ(SpendBetween(s, kLedgerNow - hours(10), kLedgerNow - hours(3)), 0);
}

TEST(LedgerTest, OpenStretchRunsToTheEndOfTheSpan) {
  std::vector<SpendRecord> s = {Stretch("READY", kV4_8, kLedgerNow - minutes(30), std::nullopt)};
  EXPECT_NEAR(SpendBetween(s, kLedgerNow - hours(1), kLedgerNow), 0.5 * kV4_8, 1e-9);
  EXPECT_NEAR(SpendBetween(s, kLedgerNow - hours(1), kLedgerNow + minutes(30)), kV4_8, 1e-9);
  // Opened after the span ends.
  EXPECT_EQ(SpendBetween(s, kLedgerNow - hours(2), kLedgerNow - hours(1)), 0);
}

TEST(LedgerTest, HuskBillsAndWaitingQueueDoesNot) {
  std::vector<SpendRecord> s = {
      Stretch("WAITING_FOR_RESOURCES", kV4_8, kLedgerNow - hours(5), kLedgerNow - hours(4)),
      Stretch("READY", kV4_8, kLedgerNow - hours(4), kLedgerNow - hours(2)),
      Stretch("PREEMPTED", kV4_8, kLedgerNow - hours(2), kLedgerNow - hours(1)),
      Stretch("STOPPED", kV4_8, kLedgerNow - hours(1), std::nullopt),
  };
  EXPECT_NEAR(SpendBetween(s, kLedgerNow - hours(6), kLedgerNow), 3 * kV4_8, 1e-9);
}

TEST(LedgerTest, UtcDay) {
  EXPECT_EQ(UtcDayStart(kLedgerNow), kMidnight);
  EXPECT_EQ(UtcDayStart(kMidnight), kMidnight);
  EXPECT_EQ(UtcDayStart(kMidnight - seconds(1)), kMidnight - hours(24));
}

TEST(LedgerTest, NoBudgetStillSums) {
  std::vector<SpendRecord> s = {Stretch("READY", kV4_8, kLedgerNow - hours(2), std::nullopt)};
  BudgetState b = CheckBudget(std::nullopt, s, kLedgerNow);
  EXPECT_FALSE(b.reached);
  EXPECT_EQ(b.why, "");
  EXPECT_FALSE(b.limit_day.has_value());
  EXPECT_NEAR(b.spent_total, 2 * kV4_8, 1e-9);
  EXPECT_NEAR(b.rate_per_hour, kV4_8, 1e-9);
}

TEST(LedgerTest, DailyBudgetCountsTheUtcDay) {
  // 22:00 yesterday to 02:00 today, then again from 14:00 today, still open.
  std::vector<SpendRecord> s = {
      Stretch("READY", 10, kMidnight - hours(2), kMidnight + hours(2)),
      Stretch("READY", 10, kLedgerNow - hours(1), std::nullopt),
      Stretch("STOPPED", 10, kLedgerNow - minutes(10), std::nullopt),  // costs nothing, no rate
  };
  BudgetSpec spec;
  spec.usd_per_day = 31;
  spec.action = BudgetAction::kDeleteSpot;
  BudgetState b = CheckBudget(spec, s, kLedgerNow);
  EXPECT_NEAR(b.spent_day, 30, 1e-9);  // 2 h after midnight and 1 h now
  EXPECT_NEAR(b.spent_total, 50, 1e-9);
  EXPECT_NEAR(b.rate_per_hour, 10, 1e-9);
  EXPECT_FALSE(b.reached);
  EXPECT_EQ(b.limit_day, 31);
  EXPECT_EQ(b.action, BudgetAction::kDeleteSpot);

  // Six minutes later the day's $31 is spent.
  b = CheckBudget(spec, s, kLedgerNow + minutes(6));
  EXPECT_TRUE(b.reached);
  EXPECT_EQ(b.why, "usd_per_day $31.00 reached: $31.00 spent today (UTC), running at $10.00/h");

  // A new UTC day starts afresh; the past day's spending stays in the total.
  BudgetState tomorrow = CheckBudget(spec, {s[0]}, kMidnight + hours(24));
  EXPECT_FALSE(tomorrow.reached);
  EXPECT_EQ(tomorrow.spent_day, 0);
}

TEST(LedgerTest, TotalBudget) {
  // Spread over recreates of the node: three stretches, two incarnations.
  std::vector<SpendRecord> s = {
      Stretch("READY", kV4_8, kLedgerNow - hours(30), kLedgerNow - hours(26)),
      Stretch("PREEMPTED", kV4_8, kLedgerNow - hours(26), kLedgerNow - hours(25)),
      Stretch("READY", kV4_8, kLedgerNow - hours(2), std::nullopt),
  };
  BudgetSpec spec;
  spec.usd_total = 7.5 * kV4_8;  // 7 h spent by now
  EXPECT_FALSE(CheckBudget(spec, s, kLedgerNow).reached);
  BudgetState b = CheckBudget(spec, s, kLedgerNow + hours(1));
  EXPECT_TRUE(b.reached);
  EXPECT_EQ(b.why, "usd_total $96.60 reached: $103.04 spent in all, running at $12.88/h");
  EXPECT_EQ(b.action, BudgetAction::kStopCreating);  // the default
}

}  // namespace
}  // namespace tpufleet
