#include "util/clock.h"

#include <gtest/gtest.h>

#include <chrono>

#include "util/testing/fake_clock.h"

namespace tpufleet {
namespace {

using namespace std::chrono_literals;

TEST(FakeClock, StartsOnNewYear2026) {
  FakeClock clock;
  EXPECT_EQ(clock.Now(), std::chrono::sys_days(std::chrono::year{2026} / 1 / 1));
}

TEST(FakeClock, StandsStillUntilTold) {
  FakeClock clock;
  Clock::WallTime wall = clock.Now();
  Clock::MonoTime mono = clock.MonotonicNow();
  EXPECT_EQ(clock.Now(), wall);
  EXPECT_EQ(clock.MonotonicNow(), mono);
}

TEST(FakeClock, SleepForAdvancesBothClocksAtOnce) {
  FakeClock fake;
  Clock& clock = fake;  // through the interface, as code under test sees it
  Clock::WallTime wall = clock.Now();
  Clock::MonoTime mono = clock.MonotonicNow();
  clock.SleepFor(90min);
  EXPECT_EQ(clock.Now() - wall, 90min);
  EXPECT_EQ(clock.MonotonicNow() - mono, 90min);
  clock.SleepFor(1500ms);
  EXPECT_EQ(clock.MonotonicNow() - mono, 90min + 1500ms);
}

TEST(FakeClock, AdvanceMovesTime) {
  FakeClock clock;
  Clock::MonoTime mono = clock.MonotonicNow();
  clock.Advance(24h);
  EXPECT_EQ(clock.MonotonicNow() - mono, 24h);
  EXPECT_EQ(clock.Now(), std::chrono::sys_days(std::chrono::year{2026} / 1 / 2));
}

}  // namespace
}  // namespace tpufleet
