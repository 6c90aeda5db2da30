// FakeClock: a Clock whose time moves only when a test says so. SleepFor advances it
// at once, so code under test that waits never really waits.
//
// Thread-safety: guarded by a mutex, so a test may advance it from another thread.
#pragma once

#include <mutex>

#include "util/clock.h"

namespace tpufleet {

class FakeClock final : public Clock {
 public:
  // Starts at 2026-01-01T00:00:00Z so printed times are recognisable in test output.
  FakeClock() : wall_(std::chrono::sys_days(std::chrono::year{2026} / 1 / 1)) {}

  WallTime Now() const override {
    std::lock_guard<std::mutex> l(mu_);
    return wall_;
  }
  MonoTime MonotonicNow() const override {
    std::lock_guard<std::mutex> l(mu_);
    return mono_;
  }
  void SleepFor(std::chrono::nanoseconds d) override { Advance(d); }

  void Advance(std::chrono::nanoseconds d) {
    std::lock_guard<std::mutex> l(mu_);
    wall_ += std::chrono::duration_cast<std::chrono::system_clock::duration>(d);
    mono_ += std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
  }

 private:
  mutable std::mutex mu_;
  WallTime wall_;   // guarded by mu_
  MonoTime mono_;   // guarded by mu_
};

}  // namespace tpufleet
