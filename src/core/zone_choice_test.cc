#include "core/zone_choice.h"

#include <gtest/gtest.h>

namespace tpufleet {
namespace {

using std::chrono::minutes;
using Zones = std::vector<std::string>;

const Clock::WallTime kChoiceNow = Clock::WallTime(std::chrono::hours(500000));

TEST(OrderZonesTest, KeepsTheSpecOrderWithoutStockouts) {
  EXPECT_EQ(OrderZones({"a", "b", "c"}, "v4-32", {}, kChoiceNow), (Zones{"a", "b", "c"}));
}

TEST(OrderZonesTest, RecentStockoutGoesLast) {
  std::vector<Stockout> s = {{"v4-32", "a", kChoiceNow - minutes(5)}};
  EXPECT_EQ(OrderZones({"a", "b", "c"}, "v4-32", s, kChoiceNow), (Zones{"b", "c", "a"}));
}

TEST(OrderZonesTest, OldestStockoutFirstAmongStockedOut) {
  std::vector<Stockout> s = {{"v4-32", "a", kChoiceNow - minutes(5)},
                             {"v4-32", "b", kChoiceNow - minutes(30)},
                             {"v4-32", "a", kChoiceNow - minutes(50)}};
  // a's latest stockout (5 min) is newer than b's (30 min), so b comes before a.
  EXPECT_EQ(OrderZones({"a", "b", "c"}, "v4-32", s, kChoiceNow), (Zones{"c", "b", "a"}));
}

TEST(OrderZonesTest, IgnoresOtherTypesAndForgottenStockouts) {
  std::vector<Stockout> s = {
      {"v5p-8", "a", kChoiceNow - minutes(1)},
      {"v4-32", "b", kChoiceNow - minutes(61)},
      {"v4-32", "c", kChoiceNow + minutes(5)}};  // from a clock that ran ahead
  EXPECT_EQ(OrderZones({"a", "b", "c"}, "v4-32", s, kChoiceNow), (Zones{"a", "b", "c"}));
}

TEST(OrderZonesTest, EveryZoneStockedOutStillListsEveryZone) {
  std::vector<Stockout> s = {{"v4-32", "a", kChoiceNow - minutes(1)},
                             {"v4-32", "b", kChoiceNow - minutes(2)}};
  EXPECT_EQ(OrderZones({"a", "b"}, "v4-32", s, kChoiceNow), (Zones{"b", "a"}));
}

}  // namespace
}  // namespace tpufleet
