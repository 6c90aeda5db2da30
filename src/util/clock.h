// Clock: the one source of time for tpufleet.
//
// Code that needs "now", a deadline or a sleep takes a Clock& so tests can drive time
// with FakeClock (util/testing/fake_clock.h) instead of sleeping. Wall time is for
// timestamps shown to people and stored; monotonic time is for deadlines and intervals,
// which must not jump when the wall clock is set.
//
// Thread-safety: implementations must be safe to call from any thread.
#pragma once

#include <chrono>

namespace tpufleet {

class Clock {
 public:
  using WallTime = std::chrono::system_clock::time_point;
  using MonoTime = std::chrono::steady_clock::time_point;

  Clock() = default;
  Clock(const Clock&) = delete;
  Clock& operator=(const Clock&) = delete;
  virtual ~Clock() = default;

  virtual WallTime Now() const = 0;
  virtual MonoTime MonotonicNow() const = 0;
  virtual void SleepFor(std::chrono::nanoseconds d) = 0;
};

/// The system clocks. Only src/app constructs one; everything else gets a Clock&.
class RealClock final : public Clock {
 public:
  WallTime Now() const override;
  MonoTime MonotonicNow() const override;
  void SleepFor(std::chrono::nanoseconds d) override;
};

}  // namespace tpufleet
