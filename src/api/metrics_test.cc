// The metrics report's JSON (api/metrics.h) and the protocol's `metrics` op: encoded from
// fixed values and compared with golden files in src/api/testdata/ (TPUFLEET_UPDATE_GOLDEN=1
// rewrites them), read back, the refusals of bad input, and the answer's size bound.
#include "api/metrics.h"

#include <gtest/gtest.h>

#include "api/agent.h"
#include "api/testing/golden.h"

namespace tpufleet::api {
namespace {

using api_testing::ExpectGolden;

// A v4 worker running job jab2cd3e on two chips, with everything measured.
MetricsReport Busy() {
  MetricsReport r;
  ChipSample chip;
  chip.index = 0;
  chip.kind = "tpu";
  chip.device = "/dev/accel0";
  chip.holders = {{4242, "alice", "python3 train.py --steps 10", "jab2cd3e"}};
  chip.duty_cycle_percent = 61.5;
  chip.hbm_used_bytes = 12884901888;
  chip.hbm_total_bytes = 34359738368;
  chip.hbm_bandwidth_percent = 40.25;
  chip.idle_seconds = 0.5;
  chip.hlo_queue = 3;
  chip.port = 8431;
  ChipSample second = chip;
  second.index = 1;
  second.device = "/dev/accel1";
  second.duty_cycle_percent = 59;
  r.sample.time_unix_ms = 1764000000000;
  r.sample.chips = {chip, second};
  r.sample.host = {240, 12.5, 68719476736, 405874409472, 1, 1048576, 0, 2000.5, 1500};
  r.sample.jobs = {{"jab2cd3e", "alice", 180, 24000, 97.5, 8589934592}};
  r.window = {60, 60, 60.25, 3, 0, "jab2cd3e", 181, 24000, 97, 0};
  r.history = {{1763999999000, 60, 12884901888, 68719476736, 12, 68719476736},
               {1764000000000, 61, 12884901888, 68719476736, 12.5, 68719476736}};
  r.step_seconds = 1;
  return r;
}

// A GPU server where nothing is measured yet: no runtime metrics, no rates, no holder.
MetricsReport Bare() {
  MetricsReport r;
  ChipSample gpu;
  gpu.kind = "gpu";
  gpu.device = "/dev/nvidia0";
  r.sample.time_unix_ms = 1764000000000;
  r.sample.chips = {gpu};
  r.sample.host.cpus = 16;
  r.sample.host.memory_total_bytes = 68719476736;
  r.window.seconds = 60;
  r.window.idle_since_unix_ms = 1763999000000;
  return r;
}

TEST(MetricsReport, Golden) {
  ExpectGolden("src/api/testdata/metrics_report.jsonl",
               ToJson(Busy()) + "\n" + ToJson(Bare()) + "\n");
}

TEST(MetricsReport, ReadsBack) {
  for (const MetricsReport& report : {Busy(), Bare()}) {
    Result<MetricsReport> back = ParseMetricsReport(ToJson(report));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(ToJson(*back), ToJson(report));
  }
  // What was not measured stays unmeasured, not 0.
  Result<MetricsReport> bare = ParseMetricsReport(ToJson(Bare()));
  ASSERT_TRUE(bare.ok());
  EXPECT_FALSE(bare->sample.chips.at(0).duty_cycle_percent.has_value());
  EXPECT_FALSE(bare->window.duty_cycle_percent.has_value());
  EXPECT_FALSE(bare->sample.host.net_rx_bytes_per_second.has_value());
  // An integer where a number is wanted is a number; unknown fields are ignored.
  Result<MetricsReport> loose = ParseMetricsReport(
      R"({"sample":{"chips":[{"duty_cycle_percent":7,"new":[1]}]},"later":true})");
  ASSERT_TRUE(loose.ok()) << loose.status().ToString();
  EXPECT_EQ(loose->sample.chips.at(0).duty_cycle_percent, 7.0);
}

TEST(MetricsReport, BadInputNamesTheField) {
  struct Case {
    std::string json;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {"[]", "metrics report is not a JSON object"},
           {R"({"sample":{"chips":[{"duty_cycle_percent":"high"}]}})",
            "metrics report: \"sample.chips[0].duty_cycle_percent\" is string, not a number"},
           {R"({"sample":{"host":{"cpus":1.5}}})",
            "metrics report: \"sample.host.cpus\" is number, not an integer"},
           {R"({"history":{}})", "metrics report: \"history\" is object, not a list"},
           {R"({"window":{"job":7}})", "metrics report: \"window.job\" is number, not a string"},
       }) {
    Result<MetricsReport> r = ParseMetricsReport(c.json);
    ASSERT_FALSE(r.ok()) << c.json;
    EXPECT_EQ(r.status(), InvalidArgumentError(c.message)) << c.json;
  }
}

TEST(MetricsOp, Lines) {
  AgentRequest request;
  request.op = AgentOp::kMetrics;
  request.metrics = {3600, 10};
  std::string text = ToLine(request) + "\n" + AnswerLine({Status::Ok(), Bare()}) + "\n";
  ExpectGolden("src/api/testdata/agent_metrics_lines.jsonl", text);

  Result<AgentRequest> back = ParseAgentRequest(ToLine(request));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->op, AgentOp::kMetrics);
  EXPECT_EQ(back->metrics.history_seconds, 3600);
  EXPECT_EQ(back->metrics.step_seconds, 10);
  EXPECT_FALSE(IsStreamingOp(AgentOp::kMetrics));

  // No fields: the latest sample and the window, no history.
  Result<AgentRequest> plain = ParseAgentRequest(R"({"v":1,"op":"metrics"})");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->metrics.history_seconds, 0);

  Result<AgentLine> answer = ParseAgentLine(AnswerLine({Status::Ok(), Busy()}), AgentOp::kMetrics);
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  EXPECT_EQ(answer->kind, AgentLine::Kind::kAnswer);
  EXPECT_EQ(ToJson(std::get<MetricsReport>(answer->answer.body)), ToJson(Busy()));
}

TEST(MetricsOp, BadRequests) {
  struct Case {
    std::string line;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"v":1,"op":"metrics","history_seconds":86401})",
            "metrics: \"history_seconds\" is 86401, not within 0..86400 (the agent keeps 24 "
            "hours)"},
           {R"({"v":1,"op":"metrics","history_seconds":-1})",
            "metrics: \"history_seconds\" is -1, not within 0..86400 (the agent keeps 24 hours)"},
           {R"({"v":1,"op":"metrics","step_seconds":3601})",
            "metrics: \"step_seconds\" is 3601, not within 0..3600"},
           {R"({"v":1,"op":"metrics","step_seconds":1.5})",
            "metrics: \"step_seconds\" is number, not an integer"},
       }) {
    Result<AgentRequest> r = ParseAgentRequest(c.line);
    ASSERT_FALSE(r.ok()) << c.line;
    EXPECT_EQ(r.status(), InvalidArgumentError(c.message)) << c.line;
  }
}

// The largest answer the agent gives (kMaxHistoryPoints points, every field set with
// full-precision numbers, eight chips with a holder's longest command) fits one line.
TEST(MetricsOp, LargestAnswerFitsALine) {
  MetricsReport r = Busy();
  ChipSample chip = r.sample.chips.at(0);
  chip.holders.at(0).command = std::string(256, 'c');
  chip.duty_cycle_percent = 61.123456789012345;
  r.sample.chips.assign(8, chip);
  r.sample.jobs.assign(8, r.sample.jobs.at(0));
  HistoryPoint point{1764000000000, 61.123456789012345, 1288490188812,
                     3435973836812, 12.123456789012345, 687194767361};
  r.history.assign(kMaxHistoryPoints, point);
  std::string line = AnswerLine({Status::Ok(), r});
  EXPECT_LT(line.size(), kMaxAgentLineBytes);
  EXPECT_TRUE(ParseAgentLine(line, AgentOp::kMetrics).ok());
}

}  // namespace
}  // namespace tpufleet::api
