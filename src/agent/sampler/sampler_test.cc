// The Sampler on a fake host tree with a fake clock, fake runtime metrics and a fake
// GPU: what one sample gathers, its rates, the holders' jobs, idle_since and the report.
#include "agent/sampler/sampler.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "agent/host/testing/fake_host.h"
#include "util/testing/fake_clock.h"

namespace tpufleet::agent::sampler {
namespace {

using host::testing::FakeHost;

class FakeChipMetrics final : public ChipMetricsReader {
 public:
  Result<std::vector<tpu_metrics::RuntimeChipMetrics>> Read(int port,
                                                            std::chrono::milliseconds) override {
    ports.push_back(port);
    auto it = served.find(port);
    if (it == served.end()) {
      return UnavailableError("no runtime metrics on port " + std::to_string(port));
    }
    return it->second;
  }
  std::map<int, std::vector<tpu_metrics::RuntimeChipMetrics>> served;
  std::vector<int> ports;  // asked, in order
};

class FakeGpus final : public GpuReader {
 public:
  Result<std::vector<ChipSample>> Read() override { return gpus; }
  std::vector<ChipSample> gpus;
};

// "pid (comm) S ppid pgrp SESSION … utime stime cutime cstime … starttime vsize rss"
std::string Stat(int pid, int session, int utime, int rss_pages = 100) {
  return std::to_string(pid) + " (python3) R 1 " + std::to_string(session) + " " +
         std::to_string(session) + " 0 -1 0 0 0 0 0 " + std::to_string(utime) +
         " 0 0 0 20 0 1 0 777 1000 " + std::to_string(rss_pages) + "\n";
}

class SamplerTest : public ::testing::Test {
 protected:
  SamplerTest() {
    host_.AddPci("0000:00:04.0", "0x005e");
    host_.AddPci("0000:00:05.0", "0x005e");
    host_.AddNode("accel0");
    host_.AddNode("accel1");
    Write("proc/meminfo", "MemTotal: 1000 kB\nMemAvailable: 250 kB\n");
    Write("proc/net/dev", "eth0: 1000 0 0 0 0 0 0 0 2000 0 0 0 0 0 0 0\n");
    Write("proc/diskstats", " 253 0 vda 1 0 8 0 1 0 16 0 0 0 0\n");
    Write("sys/block/vda/device/.keep", "");
    HostCpu(1000, 4000);
    // The job: its keeper (500) leads the session its python (501) runs in, on chip 0.
    host_.AddProcess(500, 0, {"tpufleet-agent", "keep", "jtrainaa"});
    Write("proc/500/stat", Stat(500, 500, 5));
    host_.AddProcess(501, 1001, {"python3", "train.py"}, {host_.paths().dev + "/accel0"});
    JobTicks(100);
    ChipSample gpu;
    gpu.kind = "gpu";
    gpu.device = "/dev/nvidia0";
    gpu.duty_cycle_percent = 30;
    gpu.holders = {ChipHolder{501, "", "", ""}};
    gpus_.gpus = {gpu};
    tpu_metrics::RuntimeChipMetrics m;
    m.device_id = 0;
    m.duty_cycle_percent = 60;
    m.hbm_usage_bytes = int64_t{8} << 30;
    m.hbm_total_bytes = int64_t{32} << 30;
    m.hlo_queue = 2;
    metrics_.served[8432] = {m};
  }

  void Write(const std::string& path, const std::string& text) { host_.dir().Write(path, text); }
  void HostCpu(int busy, int total) {
    Write("proc/stat", "cpu  " + std::to_string(busy) + " 0 0 " + std::to_string(total - busy) +
                           " 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0\n");
  }
  void JobTicks(int utime) {
    Write("proc/501/stat", Stat(501, 500, utime));
    Write("proc/501/task/501/stat", Stat(501, 500, utime));
  }
  SamplerOptions Options() const { return {host_.paths(), kDefaultSampleInterval}; }

  FakeHost host_;
  FakeClock clock_;
  FakeChipMetrics metrics_;
  FakeGpus gpus_;
};

TEST_F(SamplerTest, ASampleOfTheHostItsJobAndChipsWithRatesFromThePreviousOne) {
  Sampler sampler(clock_, Options(), &metrics_, &gpus_);
  sampler.SetJobs({{"jtrainaa", "alice", 500, 501, {8431, 8432}}});
  WorkerSample first = sampler.Sample();
  ASSERT_EQ(first.jobs.size(), 1u);
  EXPECT_EQ(first.jobs[0].cpu_percent, 0);  // no rate yet

  clock_.Advance(std::chrono::seconds(1));
  HostCpu(1300, 4400);
  JobTicks(100 + static_cast<int>(sysconf(_SC_CLK_TCK)) / 2);  // half a CPU for a second
  Write("proc/net/dev", "eth0: 3000 0 0 0 0 0 0 0 2500 0 0 0 0 0 0 0\n");
  WorkerSample s = sampler.Sample();

  EXPECT_EQ(s.host.cpus, 2);
  EXPECT_DOUBLE_EQ(s.host.cpu_percent, 75);
  EXPECT_EQ(s.host.memory_used_bytes, 750 * 1024);
  EXPECT_EQ(s.host.net_rx_bytes_per_second, 2000);
  EXPECT_EQ(s.host.net_tx_bytes_per_second, 500);
  EXPECT_EQ(s.host.disk_read_bytes_per_second, 0);
  ASSERT_EQ(s.jobs.size(), 1u);
  EXPECT_EQ(s.jobs[0].id, "jtrainaa");
  EXPECT_EQ(s.jobs[0].user, "alice");
  EXPECT_NEAR(s.jobs[0].cpu_percent, 50, 1);
  EXPECT_NEAR(s.jobs[0].busiest_thread_percent, 50, 1);
  EXPECT_EQ(s.jobs[0].memory_bytes, 100 * sysconf(_SC_PAGESIZE));

  // 8431 (nothing there) and the job's 8432 were asked; chip 0 has 8432's metrics.
  EXPECT_EQ(metrics_.ports, (std::vector<int>{8431, 8432, 8431, 8432}));
  ASSERT_EQ(s.chips.size(), 3u);
  EXPECT_EQ(s.chips[0].device, host_.paths().dev + "/accel0");
  EXPECT_EQ(s.chips[0].duty_cycle_percent, 60);
  EXPECT_EQ(s.chips[0].hlo_queue, 2);
  EXPECT_EQ(s.chips[0].port, 8432);
  ASSERT_EQ(s.chips[0].holders.size(), 1u);
  EXPECT_EQ(s.chips[0].holders[0].pid, 501);
  EXPECT_EQ(s.chips[0].holders[0].job, "jtrainaa");
  EXPECT_EQ(s.chips[0].holders[0].command, "python3 train.py");
  EXPECT_FALSE(s.chips[1].duty_cycle_percent.has_value());
  EXPECT_TRUE(s.chips[1].holders.empty());
  // The GPU's holder is named as a TPU's is.
  EXPECT_EQ(s.chips[2].kind, "gpu");
  ASSERT_EQ(s.chips[2].holders.size(), 1u);
  EXPECT_EQ(s.chips[2].holders[0].user, "alice");
  EXPECT_EQ(s.chips[2].holders[0].job, "jtrainaa");

  MetricsReport r = sampler.Report({60, 0});
  EXPECT_EQ(r.sample.time_unix_ms, s.time_unix_ms);
  EXPECT_EQ(r.window.samples, 2);
  EXPECT_EQ(r.window.idle_since_unix_ms, 0);
  EXPECT_EQ(r.step_seconds, 1);
  ASSERT_EQ(r.history.size(), 2u);
  EXPECT_EQ(r.history[1].duty_cycle_percent, 45);  // the mean of the TPU's 60 and the GPU's 30
}

TEST_F(SamplerTest, IdleSinceTheFirstSampleThatShowsNothingInUse) {
  gpus_.gpus.clear();
  Sampler sampler(clock_, Options(), &metrics_, &gpus_);
  EXPECT_EQ(sampler.Report({}).sample.time_unix_ms, 0);  // nothing before the first sample
  sampler.SetJobs({{"jtrainaa", "alice", 500, 501, {8432}}});
  sampler.Sample();
  EXPECT_EQ(sampler.Report({}).window.idle_since_unix_ms, 0);

  // The job ended: no job, no holder, no runtime metrics (nothing serves 8431).
  sampler.SetJobs({});
  std::filesystem::remove_all(host_.dir().Path("proc/501"));
  std::filesystem::remove_all(host_.dir().Path("proc/500"));
  clock_.Advance(std::chrono::seconds(1));
  const int64_t idle_from = sampler.Sample().time_unix_ms;
  clock_.Advance(std::chrono::seconds(1));
  sampler.Sample();
  EXPECT_EQ(sampler.Report({}).window.idle_since_unix_ms, idle_from);
}

}  // namespace
}  // namespace tpufleet::agent::sampler
