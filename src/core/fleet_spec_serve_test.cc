// The spec fields `tpufleet serve` enforces and nothing else reads: the budget's action
// and a spot node's fallback to on demand (ttl and idle: fleet_spec_node_test.cc).
#include <gtest/gtest.h>

#include <string>

#include "core/fleet_spec.h"
#include "core/testing/fleet_spec_fixture.h"

namespace tpufleet::testing {
namespace {

std::string Budget(const std::string& budget) {
  return "fleet: demo\nproject: demo-project\nbudget: " + budget +
         "\nnodes: [{name: n, type: v4-8}]\n";
}

TEST_F(FleetSpecTest, BudgetActionDefaultsToStopCreating) {
  Result<FleetSpec> r = Parse(Budget("{usd_per_day: 10}"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->budget->action, BudgetAction::kStopCreating);
  EXPECT_EQ(BudgetActionName(r->budget->action), "stop-creating");
}

TEST_F(FleetSpecTest, BudgetActions) {
  for (auto [text, action] : {std::pair{"stop-creating", BudgetAction::kStopCreating},
                              std::pair{"delete-spot", BudgetAction::kDeleteSpot},
                              std::pair{"delete-all", BudgetAction::kDeleteAll}}) {
    SCOPED_TRACE(text);
    Result<FleetSpec> r = Parse(Budget(std::string("{usd_total: 500, action: ") + text + "}"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->budget->action, action);
    EXPECT_EQ(BudgetActionName(action), text);
  }
}

TEST_F(FleetSpecTest, BadBudgetAction) {
  ExpectErrors({
      {Budget("{usd_per_day: 10, action: delete}"),
       "fleet.yaml:3:35: budget.action: \"delete\" is not one of stop-creating, delete-spot, "
       "delete-all"},
      {Budget("{usd_per_day: 10, action: delete-al}"), "(did you mean delete-all?)"},
      // An action alone is no budget.
      {Budget("{action: delete-all}"), "budget: give usd_per_day, usd_total or both"},
  });
}

TEST_F(FleetSpecTest, Issue17OwnerIsWhoTheNodeHoursAreBilledTo) {
  std::string spec = "fleet: demo\nproject: demo-project\nowner: ada\n"
                     "nodes: [{name: n, type: v4-8}]\n";
  Result<FleetSpec> r = Parse(spec);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->owner, "ada");
  // Without it, whoever applies the spec is the owner: the spec says nothing.
  EXPECT_EQ(Parse(Budget("{usd_per_day: 10}"))->owner, "");
  ExpectErrors({
      {"fleet: demo\nproject: demo-project\nowner: \"Ada L\"\nnodes: [{name: n, type: v4-8}]\n",
       "fleet.yaml:3:8: owner:"},
  });
}

TEST_F(FleetSpecTest, SpotFallback) {
  Result<FleetSpec> r =
      Parse(V4Node("    capacity: spot\n    spot_fallback: {after: 3, within: 6h}\n"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->nodes[0].spot_fallback.has_value());
  EXPECT_EQ(r->nodes[0].spot_fallback->after, 3);
  EXPECT_EQ(r->nodes[0].spot_fallback->within, std::chrono::hours(6));
  // Without it a spot node stays spot however often it is lost.
  EXPECT_FALSE(Parse(V4Node("    capacity: spot\n"))->nodes[0].spot_fallback.has_value());
}

TEST_F(FleetSpecTest, BadSpotFallback) {
  ExpectNodeErrors({
      // An on-demand node has nothing to fall back from.
      {"    spot_fallback: {after: 3, within: 6h}\n",
       "fleet.yaml:6:5: nodes[0].spot_fallback: only for capacity: spot (this node is on-demand)"},
      {"    capacity: reserved\n    spot_fallback: {after: 3, within: 6h}\n",
       "this node is reserved"},
      {"    capacity: spot\n    spot_fallback: {after: 0, within: 6h}\n",
       "nodes[0].spot_fallback.after: expected a number of losses from 1 to 100"},
      {"    capacity: spot\n    spot_fallback: {after: 101, within: 6h}\n", "from 1 to 100"},
      {"    capacity: spot\n    spot_fallback: {after: 3}\n",
       "nodes[0].spot_fallback.within: this field is required"},
      {"    capacity: spot\n    spot_fallback: {within: 6h}\n",
       "nodes[0].spot_fallback.after: this field is required"},
      {"    capacity: spot\n    spot_fallback: {after: 3, within: 0s}\n",
       "nodes[0].spot_fallback.within: expected a duration above zero"},
      {"    capacity: spot\n    spot_fallback: {after: 3, within: 6h, to: reserved}\n",
       "nodes[0].spot_fallback"},
  });
}

TEST_F(FleetSpecTest, SpotFallbackIsTpuOnly) {
  EXPECT_TRUE(
      FailsWith("fleet: lab\nprovider: ssh-hosts\nnodes:\n  - name: gpus\n"
                "    hosts: [a]\n    spot_fallback: {after: 1, within: 1h}\n",
                {"nodes[0].spot_fallback: not used with provider ssh-hosts"}));
}

}  // namespace
}  // namespace tpufleet::testing
