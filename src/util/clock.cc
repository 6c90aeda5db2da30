#include "util/clock.h"

#include <thread>

namespace tpufleet {

Clock::WallTime RealClock::Now() const { return std::chrono::system_clock::now(); }

Clock::MonoTime RealClock::MonotonicNow() const { return std::chrono::steady_clock::now(); }

void RealClock::SleepFor(std::chrono::nanoseconds d) { std::this_thread::sleep_for(d); }

}  // namespace tpufleet
