// NVML through the real (static) agent binary: `serve --nvml PATH` loads the stand-in
// libnvidia-ml (agent/host/testing/nvml_standin.c) with the static glibc's dlopen, and the
// metrics op shows each GPU as the library told it, its holder named from /proc.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include "agent/running_agent.h"
#include "api/metrics.h"

namespace tpufleet::agent {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

// The latest sample once it has `chips` chips (serve samples every 200 ms).
api::MetricsReport SampleWithChips(const RunningAgent& agent, size_t chips) {
  api::MetricsReport r;
  for (int i = 0; i < 100; ++i) {
    api::AgentRequest q;
    q.op = api::AgentOp::kMetrics;
    api::AgentAnswer a = agent.Ask(q);
    if (const auto* got = std::get_if<api::MetricsReport>(&a.body);
        got != nullptr && got->sample.time_unix_ms != 0) {
      r = *got;
      if (r.sample.chips.size() == chips) {
        return r;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return r;
}

class AgentNvml : public ::testing::Test {
 protected:
  void TearDown() override { ::unsetenv("TPUFLEET_NVML_STANDIN"); }
  TempDir dir_;
};

TEST_F(AgentNvml, ServeReadsEveryNumberOfTheLibrarysGpus) {
  std::string me = std::to_string(getpid());
  ::setenv("TPUFLEET_NVML_STANDIN",
           dir_.Write("nvml.txt", "gpu 37 12 " + std::to_string(30 * kGiB) + " " +
                                      std::to_string(80 * kGiB) + " 0 " + me + "\n" +
                                      "gpu 80 65 " + std::to_string(70 * kGiB) + " " +
                                      std::to_string(80 * kGiB) + " 1 -\n")
               .c_str(),
           1);
  RunningAgent agent({"--sample-interval", "200", "--nvml", NVML_STANDIN});
  api::MetricsReport r = SampleWithChips(agent, 2);
  ASSERT_EQ(r.sample.chips.size(), 2u) << api::ToJson(r);
  const ChipSample& a = r.sample.chips[0];
  EXPECT_EQ(a.kind, "gpu");
  EXPECT_EQ(a.index, 0);
  EXPECT_EQ(a.device, "/dev/nvidia0");
  EXPECT_EQ(a.duty_cycle_percent, 37);
  EXPECT_EQ(a.hbm_bandwidth_percent, 12);
  EXPECT_EQ(a.hbm_used_bytes, 30 * kGiB);
  EXPECT_EQ(a.hbm_total_bytes, 80 * kGiB);
  ASSERT_EQ(a.holders.size(), 1u) << api::ToJson(r);
  EXPECT_EQ(a.holders[0].pid, getpid());
  EXPECT_FALSE(a.holders[0].user.empty()) << api::ToJson(r);
  EXPECT_NE(a.holders[0].command.find("agent_test"), std::string::npos) << api::ToJson(r);
  const ChipSample& b = r.sample.chips[1];
  EXPECT_EQ(b.device, "/dev/nvidia1");
  EXPECT_EQ(b.duty_cycle_percent, 80);
  EXPECT_EQ(b.hbm_bandwidth_percent, 65);
  EXPECT_EQ(b.hbm_used_bytes, 70 * kGiB);
  EXPECT_TRUE(b.holders.empty());
}

TEST_F(AgentNvml, NoLibraryIsNoGpusAndServeRunsOn) {
  RunningAgent agent({"--sample-interval", "200", "--nvml", dir_.Path("libnvidia-ml.so.1")});
  api::MetricsReport r = SampleWithChips(agent, 0);
  EXPECT_NE(r.sample.time_unix_ms, 0) << "serve samples without GPUs";
  EXPECT_TRUE(r.sample.chips.empty()) << api::ToJson(r);
}

}  // namespace
}  // namespace tpufleet::agent
