#include "core/zone_choice.h"

#include <gtest/gtest.h>

namespace tpufleet {
namespace {

using std::chrono::minutes;
using Zones = std::vector<std::string>;

const Clock::WallTime kNow = Clock::WallTime(std::chrono::hours(500000));

TEST(OrderZonesTest, KeepsTheSpecOrderWithoutStockouts) {
  EXPECT_EQ(OrderZones({"a", "b", "c"}, "v4-32", {}, kNow), (Zones{"a", "b", "c"}));
}

TEST(OrderZonesTest, RecentStockoutGoesLast) {
  std::vector<Stockout> s = {{"v4-32", "a", kNow - minutes(5)}};
  EXPECT_EQ(OrderZones({"a", "b", "c"}, "v4-32", s, kNow), (Zones{"b", "c", "a"}));
}

TEST(OrderZonesTest, OldestStockoutFirstAmongStockedOut) {
  std::vector<Stockout> s = {{"v4-32", "a", kNow - minutes(5)},
                             {"v4-32", "b", kNow - minutes(30)},
                             {"v4-32", "a", kNow - minutes(50)}};
  // a's latest stockout (5 min) is newer than b's (30 min), so b comes before a.
  EXPECT_EQ(OrderZones({"a", "b", "c"}, "v4-32", s, kNow), (Zones{"c", "b", "a"}));
}

TEST(OrderZonesTest, IgnoresOtherTypesAndForgottenStockouts) {
  std::vector<Stockout> s = {{"v5p-8", "a", kNow - minutes(1)},
                             {"v4-32", "b", kNow - minutes(61)},
                             {"v4-32", "c", kNow + minutes(5)}};  // from a clock that ran ahead
  EXPECT_EQ(OrderZones({"a", "b", "c"}, "v4-32", s, kNow), (Zones{"a", "b", "c"}));
}

TEST(OrderZonesTest, EveryZoneStockedOutStillListsEveryZone) {
  std::vector<Stockout> s = {{"v4-32", "a", kNow - minutes(1)},
                             {"v4-32", "b", kNow - minutes(2)}};
  EXPECT_EQ(OrderZones({"a", "b"}, "v4-32", s, kNow), (Zones{"b", "a"}));
}

}  // namespace
}  // namespace tpufleet
