#include "util/prometheus_text.h"

#include <gtest/gtest.h>

#include <limits>

namespace tpufleet {
namespace {

TEST(PrometheusText, NumbersReadBackExactly) {
  EXPECT_EQ(PrometheusNumber(0), "0");
  EXPECT_EQ(PrometheusNumber(41.5), "41.5");
  EXPECT_EQ(PrometheusNumber(0.1), "0.1");
  EXPECT_EQ(PrometheusNumber(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(PrometheusNumber(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(PrometheusNumber(std::numeric_limits<double>::quiet_NaN()), "NaN");
}

TEST(PrometheusText, HelpIsEscapedAndTheTypeNamed) {
  EXPECT_EQ(PrometheusFamilyHeader("x_total", "a\\b\nc", "counter"),
            "# HELP x_total a\\\\b\\nc\n# TYPE x_total counter\n");
  EXPECT_EQ(EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
}

}  // namespace
}  // namespace tpufleet
