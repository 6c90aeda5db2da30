#include "agent/sampler/history.h"

#include <gtest/gtest.h>

#include <iostream>

#include "util/testing/fake_clock.h"

namespace tpufleet::agent::sampler {
namespace {

int64_t UnixMs(const Clock& clock) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock.Now().time_since_epoch())
      .count();
}

// A sample at the clock's now: host CPU `cpu`, one chip at duty `duty` holding 2 GiB.
WorkerSample At(const Clock& clock, double cpu, std::optional<double> duty = std::nullopt) {
  WorkerSample s;
  s.time_unix_ms = UnixMs(clock);
  s.host.cpu_percent = cpu;
  s.host.memory_used_bytes = int64_t{1} << 30;
  ChipSample chip;
  chip.duty_cycle_percent = duty;
  chip.hbm_used_bytes = int64_t{2} << 30;
  s.chips = {chip, chip};
  return s;
}

TEST(History, SecondsAreAveragedAndACoarserStepAveragesThem) {
  FakeClock clock;
  History h;
  // 10 samples a second (serve --sample-interval 100) for 20 s: CPU 10 in the first
  // 10 s, 30 in the next; within each second the samples alternate ±5 around that.
  for (int i = 0; i < 200; ++i) {
    h.Add(At(clock, (i < 100 ? 10 : 30) + (i % 2 == 0 ? 5 : -5), 50));
    clock.Advance(std::chrono::milliseconds(100));
  }
  const int64_t now = UnixMs(clock);
  History::Points fine = h.Query({20, 0}, now);
  EXPECT_EQ(fine.step_seconds, 1);
  ASSERT_EQ(fine.points.size(), 20u);
  EXPECT_EQ(fine.points[0].cpu_percent, 10);
  EXPECT_EQ(fine.points[19].cpu_percent, 30);
  EXPECT_EQ(fine.points[19].time_unix_ms - fine.points[0].time_unix_ms, 19000);
  EXPECT_EQ(fine.points[5].duty_cycle_percent, 50);
  EXPECT_EQ(fine.points[5].hbm_used_bytes, int64_t{4} << 30);  // summed over the chips
  EXPECT_EQ(fine.points[5].memory_used_bytes, int64_t{1} << 30);

  History::Points coarse = h.Query({20, 10}, now);
  EXPECT_EQ(coarse.step_seconds, 10);
  ASSERT_EQ(coarse.points.size(), 2u);
  EXPECT_EQ(coarse.points[0].cpu_percent, 10);
  EXPECT_EQ(coarse.points[1].cpu_percent, 30);
  History::Points all = h.Query({20, 20}, now);
  ASSERT_EQ(all.points.size(), 1u);
  EXPECT_EQ(all.points[0].cpu_percent, 20);

  EXPECT_TRUE(h.Query({0, 0}, now).points.empty());
}

TEST(History, AnAbsentValueStaysAbsentAndIsNotAveragedAsZero) {
  FakeClock clock;
  History h;
  h.Add(At(clock, 10, std::nullopt));
  clock.Advance(std::chrono::seconds(1));
  h.Add(At(clock, 10, 80));
  clock.Advance(std::chrono::seconds(1));
  History::Points p = h.Query({10, 0}, UnixMs(clock));
  ASSERT_EQ(p.points.size(), 2u);
  EXPECT_FALSE(p.points[0].duty_cycle_percent.has_value());
  EXPECT_EQ(p.points[1].duty_cycle_percent, 80);
  EXPECT_EQ(h.Query({10, 10}, UnixMs(clock)).points.back().duty_cycle_percent, 80);
}

TEST(History, TheWindowKeepsTheLastMinuteOfRawSamples) {
  FakeClock clock;
  History h;
  for (int i = 0; i < 90; ++i) {
    h.Add(At(clock, i));
    clock.Advance(std::chrono::seconds(1));
  }
  std::vector<WorkerSample> w = h.Window(UnixMs(clock), std::chrono::seconds(60));
  ASSERT_EQ(w.size(), 59u);  // the samples of the last 60 s: 31 … 89
  EXPECT_EQ(w.front().host.cpu_percent, 31);
  EXPECT_EQ(w.back().host.cpu_percent, 89);
  // A sample from before the last (the wall clock set back) is dropped.
  WorkerSample old = At(clock, 1000);
  old.time_unix_ms -= 3'600'000;
  h.Add(old);
  EXPECT_EQ(h.Window(UnixMs(clock), std::chrono::seconds(60)).back().host.cpu_percent, 89);
}

TEST(History, ADayInConstantMemoryWithTenSecondPointsAfterTheHour) {
  FakeClock clock;
  History h;
  size_t after_two_minutes = 0;
  // 25 hours at 1 Hz: CPU is the hour of the day, so each point says when it was.
  const int seconds = 25 * 3600;
  for (int i = 0; i < seconds; ++i) {
    h.Add(At(clock, i / 3600, 40));
    if (i == 120) {
      after_two_minutes = h.MemoryBytes();
    }
    clock.Advance(std::chrono::seconds(1));
  }
  EXPECT_EQ(h.MemoryBytes(), after_two_minutes);
  // 40 bytes a point: 11880 points are under half a MiB.
  EXPECT_LT(h.MemoryBytes(), size_t{600} << 10) << h.MemoryBytes();
  std::cout << "history after 25 h: " << h.MemoryBytes() << " bytes\n";

  const int64_t now = UnixMs(clock);
  // A day at most kMaxHistoryPoints points: 24 s apart.
  History::Points day = h.Query({86400, 0}, now);
  EXPECT_EQ(day.step_seconds, 24);
  EXPECT_EQ(day.points.size(), static_cast<size_t>(kMaxHistoryPoints));
  EXPECT_GE(day.points.front().time_unix_ms, now - 86'400'000 - 24'000);
  EXPECT_EQ(day.points.front().cpu_percent, 1);  // the day began in hour 1
  EXPECT_EQ(day.points.back().cpu_percent, 24);
  // A coarser step asked for: a point a minute.
  History::Points minutes = h.Query({86400, 60}, now);
  EXPECT_EQ(minutes.step_seconds, 60);
  EXPECT_NEAR(static_cast<double>(minutes.points.size()), 1440, 1);

  // The last hour is still there a second apart; 90 minutes back reaches the coarse part.
  History::Points hour = h.Query({3600, 0}, now);
  EXPECT_EQ(hour.step_seconds, 1);
  EXPECT_EQ(hour.points.size(), 3600u);
  History::Points ninety = h.Query({5400, 0}, now);
  EXPECT_EQ(ninety.step_seconds, 10);
  EXPECT_NEAR(static_cast<double>(ninety.points.size()), 540, 2);
  EXPECT_EQ(ninety.points.front().cpu_percent, 23);
}

}  // namespace
}  // namespace tpufleet::agent::sampler
