// /metrics as a Prometheus reads it: each family typed, the histogram cumulative.
#include "server/metrics.h"

#include <gtest/gtest.h>

namespace tpufleet::server {
namespace {

bool Has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

TEST(ServeMetrics, EveryFamilyOfTheSnapshot) {
  ServeSnapshot s;
  s.nodes_by_state = {{"lab", {{"READY", 3}, {"RECOVERING", 1}}}, {"a\"b", {{"READY", 1}}}};
  s.preemptions = 2;
  s.recoveries = 1;
  s.recover_seconds = {45, 200};
  s.spend_usd = {{"lab", 12.5}};
  s.last_pass_cpu_seconds = 0.004;
  s.last_pass_wall_seconds = 0.25;
  s.passes = 7;
  s.api_calls = 30;
  std::string text = MetricsText(s);
  EXPECT_TRUE(Has(text, "# TYPE tpufleet_nodes gauge")) << text;
  EXPECT_TRUE(Has(text, "tpufleet_nodes{fleet=\"lab\",state=\"READY\"} 3")) << text;
  EXPECT_TRUE(Has(text, "tpufleet_nodes{fleet=\"lab\",state=\"RECOVERING\"} 1")) << text;
  EXPECT_TRUE(Has(text, "tpufleet_nodes{fleet=\"a\\\"b\",state=\"READY\"} 1")) << text;
  EXPECT_TRUE(Has(text, "# TYPE tpufleet_preemptions_total counter")) << text;
  EXPECT_TRUE(Has(text, "tpufleet_preemptions_total 2")) << text;
  EXPECT_TRUE(Has(text, "tpufleet_recoveries_total 1")) << text;
  EXPECT_TRUE(Has(text, "# TYPE tpufleet_time_to_recover_seconds histogram")) << text;
  EXPECT_TRUE(Has(text, "tpufleet_time_to_recover_seconds_bucket{le=\"30\"} 0")) << text;
  EXPECT_TRUE(Has(text, "tpufleet_time_to_recover_seconds_bucket{le=\"60\"} 1")) << text;
  EXPECT_TRUE(Has(text, "tpufleet_time_to_recover_seconds_bucket{le=\"300\"} 2")) << text;
  EXPECT_TRUE(Has(text, "tpufleet_time_to_recover_seconds_bucket{le=\"+Inf\"} 2")) << text;
  EXPECT_TRUE(Has(text, "tpufleet_time_to_recover_seconds_sum 245")) << text;
  EXPECT_TRUE(Has(text, "tpufleet_time_to_recover_seconds_count 2")) << text;
  EXPECT_TRUE(Has(text, "tpufleet_spend_usd{fleet=\"lab\"} 12.5")) << text;
  EXPECT_TRUE(Has(text, "tpufleet_reconcile_pass_seconds 0.004")) << text;
  EXPECT_TRUE(Has(text, "# TYPE tpufleet_reconcile_pass_wall_seconds gauge")) << text;
  EXPECT_TRUE(Has(text, "tpufleet_reconcile_pass_wall_seconds 0.25")) << text;
  EXPECT_TRUE(Has(text, "tpufleet_reconcile_passes_total 7")) << text;
  EXPECT_TRUE(Has(text, "tpufleet_api_calls_total 30")) << text;
}

TEST(ServeMetrics, BeforeTheFirstRecoveryTheHistogramIsEmptyNotMissing) {
  std::string text = MetricsText({});
  EXPECT_TRUE(Has(text, "tpufleet_time_to_recover_seconds_count 0")) << text;
  EXPECT_TRUE(Has(text, "tpufleet_time_to_recover_seconds_bucket{le=\"+Inf\"} 0")) << text;
  EXPECT_TRUE(Has(text, "tpufleet_preemptions_total 0")) << text;
}

}  // namespace
}  // namespace tpufleet::server
