// The samples made of two readings (rates from deltas), and the chips' assembly, on
// counters and facts written by hand.
#include <gtest/gtest.h>

#include "agent/sampler/chips.h"
#include "agent/sampler/host_reader.h"
#include "agent/sampler/job_reader.h"

namespace tpufleet::agent::sampler {
namespace {

TEST(HostSample, RatesFromTheDeltasOfTwoReadings) {
  HostCounters before;
  before.cpu = CpuTimes{1000, 4000, 4};
  before.memory = MemInfo{8000, 6000};
  before.disk = DeviceIo{{"vda", {1000, 2000}}};
  before.net = DeviceIo{{"eth0", {0, 0}}};
  HostCounters now = before;
  now.cpu = CpuTimes{1300, 4400, 4};  // 300 of 400 ticks busy
  now.memory = MemInfo{8000, 2000};
  now.disk = DeviceIo{{"vda", {3000, 2000}}};
  now.net = DeviceIo{{"eth0", {500, 100}}};
  now.logins = 2;
  HostSample s = HostSampleOf(&before, now, 2.0);
  EXPECT_EQ(s.cpus, 4);
  EXPECT_DOUBLE_EQ(s.cpu_percent, 75);
  EXPECT_EQ(s.memory_used_bytes, 6000);
  EXPECT_EQ(s.memory_total_bytes, 8000);
  EXPECT_EQ(s.logins, 2);
  EXPECT_EQ(s.disk_read_bytes_per_second, 1000);
  EXPECT_EQ(s.disk_write_bytes_per_second, 0);
  EXPECT_EQ(s.net_rx_bytes_per_second, 250);
  EXPECT_EQ(s.net_tx_bytes_per_second, 50);

  // The first sample: CPU since boot, no rates.
  HostSample first = HostSampleOf(nullptr, now, 0);
  EXPECT_NEAR(first.cpu_percent, 100.0 * 1300 / 4400, 1e-9);
  EXPECT_FALSE(first.disk_read_bytes_per_second.has_value());
}

TEST(HostSample, DevicesThatComeOrGoBetweenReadingsMoveNoRate) {
  HostCounters before;
  before.disk = DeviceIo{{"vda", {1000, 1000}}};
  before.net = DeviceIo{{"eth0", {1000, 1000}}, {"veth1", {900000, 900000}}};
  HostCounters now;
  // veth1 went (its counts must not make the sum go back), veth2 came with a history of
  // its own, and vda was replaced by a disk whose counters restart from 0.
  now.disk = DeviceIo{{"vda", {10, 10}}};
  now.net = DeviceIo{{"eth0", {3000, 1500}}, {"veth2", {700000, 700000}}};
  HostSample s = HostSampleOf(&before, now, 2.0);
  EXPECT_EQ(s.net_rx_bytes_per_second, 1000);
  EXPECT_EQ(s.net_tx_bytes_per_second, 250);
  EXPECT_EQ(s.disk_read_bytes_per_second, 0);
  EXPECT_EQ(s.disk_write_bytes_per_second, 0);
}

TEST(JobSample, CpuOfTheJobAndItsBusiestThreadInPercentOfOneCpu) {
  JobRef job{"jbusyaaa", "alice", 4000, 4001, {}};
  JobCounters before;
  before.cpu_ticks = 1000;
  before.threads = {{4001, {50, 400, {}}}, {4002, {60, 600, {}}}, {4003, {70, 0, {}}}};
  JobCounters now;
  now.cpu_ticks = 1300;  // 300 ticks in 2 s at 100 Hz: 1.5 CPUs
  now.threads = {{4001, {50, 420, {}}}, {4002, {60, 790, {}}}, {4003, {99, 5000, {}}}};  // 4003 reused
  now.rss_bytes = 123456;
  now.cpu_limit_percent = 400;
  JobSample s = JobSampleOf(job, &before, now, 2.0, 100);
  EXPECT_EQ(s.id, "jbusyaaa");
  EXPECT_EQ(s.user, "alice");
  EXPECT_DOUBLE_EQ(s.cpu_percent, 150);
  EXPECT_DOUBLE_EQ(s.busiest_thread_percent, 95);
  EXPECT_EQ(s.memory_bytes, 123456);
  EXPECT_EQ(s.cpu_limit_percent, 400);
  // A process gone without being waited for: the total drops, which is not negative use.
  JobCounters after = now;
  after.cpu_ticks = 900;
  EXPECT_EQ(JobSampleOf(job, &now, after, 1.0, 100).cpu_percent, 0);
  EXPECT_EQ(JobSampleOf(job, nullptr, now, 0, 100).cpu_percent, 0);
  // A thread's ticks rounded up past the span read as one whole CPU, never more.
  EXPECT_EQ(JobSampleOf(job, &before, now, 1.5, 100).busiest_thread_percent, 100);
}

TEST(JobSample, AThreadThatWantsACpuAllTheTimeIsSaturatedOnAHostTooLoadedToGiveItOne) {
  JobRef job{"jspinaaa", "alice", 4000, 4001, {}};
  JobCounters before;
  before.threads = {{4001, {50, 400, 1'000'000'000}}};
  JobCounters now;
  // 1 s: it ran 0.45 s (45 ticks) and waited 0.53 s on a run queue.
  now.threads = {{4001, {50, 445, 1'980'000'000}}};
  EXPECT_DOUBLE_EQ(JobSampleOf(job, &before, now, 1.0, 100).busiest_thread_percent, 98);
  // Without schedstat on either side, its CPU time says it.
  now.threads[4001].wanted_ns.reset();
  EXPECT_DOUBLE_EQ(JobSampleOf(job, &before, now, 1.0, 100).busiest_thread_percent, 45);
}

TEST(Chips, HoldersWithTheirJobsAndMetricsByDeviceId) {
  host::TpuFacts facts;
  facts.accelerators = {{0, "0000:00:04.0", "v4", "0x005e", "/dev/accel0"},
                        {1, "0000:00:05.0", "v4", "0x005e", "/dev/accel1"}};
  host::ProcessInfo train{4242, 1001, "alice", "python3 train.py " + std::string(400, 'x'), 7};
  facts.holders = {{"/dev/accel1", train}};
  std::vector<ChipSample> chips = TpuChips(facts, {{4242, "jtrainaa"}});
  ASSERT_EQ(chips.size(), 2u);
  EXPECT_EQ(chips[0].kind, "tpu");
  EXPECT_EQ(chips[0].device, "/dev/accel0");
  EXPECT_TRUE(chips[0].holders.empty());
  ASSERT_EQ(chips[1].holders.size(), 1u);
  EXPECT_EQ(chips[1].holders[0].job, "jtrainaa");
  EXPECT_EQ(chips[1].holders[0].user, "alice");
  EXPECT_EQ(chips[1].holders[0].command.size(), kMaxHolderCommandBytes);

  // The lockfile's holder holds every chip.
  facts.lockfile.lockers = {train};
  EXPECT_EQ(TpuChips(facts, {}).at(0).holders.at(0).pid, 4242);

  tpu_metrics::RuntimeChipMetrics m1;
  m1.device_id = 1;
  m1.duty_cycle_percent = 60;
  m1.hbm_usage_bytes = 1 << 30;
  m1.hlo_queue = 3;
  tpu_metrics::RuntimeChipMetrics m2 = m1;
  m2.device_id = 2;  // no such chip found in sysfs
  AddDeviceMetrics(chips, 8431, {m1, m2});
  tpu_metrics::RuntimeChipMetrics late = m1;
  late.duty_cycle_percent = 5;
  AddDeviceMetrics(chips, 8432, {late});  // the first port to answer for a chip wins
  ASSERT_EQ(chips.size(), 3u);
  EXPECT_FALSE(chips[0].duty_cycle_percent.has_value());
  EXPECT_FALSE(chips[0].port.has_value());
  EXPECT_EQ(chips[1].duty_cycle_percent, 60);
  EXPECT_EQ(chips[1].port, 8431);
  EXPECT_EQ(chips[1].hlo_queue, 3);
  EXPECT_EQ(chips[2].index, 2);
  EXPECT_EQ(chips[2].device, "");
}

}  // namespace
}  // namespace tpufleet::agent::sampler
