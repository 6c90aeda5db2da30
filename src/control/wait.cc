#include "control/wait.h"

#include <algorithm>

namespace tpufleet {

Poller::Poller(Clock& clock, std::chrono::milliseconds min, std::chrono::milliseconds max,
               std::chrono::seconds budget)
    : clock_(clock), next_(min), max_(max), deadline_(clock.MonotonicNow() + budget) {}

bool Poller::Expired() const { return clock_.MonotonicNow() >= deadline_; }

bool Poller::Pause() {
  Clock::MonoTime now = clock_.MonotonicNow();
  std::optional<Clock::MonoTime> at = Next(now);
  if (!at) {
    return false;
  }
  clock_.SleepFor(*at - now);
  return true;
}

std::optional<Clock::MonoTime> Poller::Next(Clock::MonoTime now) {
  if (now >= deadline_) {
    return std::nullopt;
  }
  // Rounded up: a pause of 0 would poll again at once, as often as the loop turns.
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline_ - now);
  Clock::MonoTime at = now + std::min(next_, left);
  next_ = std::min(max_, next_ * 3 / 2);
  return at;
}

Status WaitOperation(CloudProvider& provider, CloudOperation op, Poller& poller) {
  while (!op.done) {
    if (!poller.Pause()) {
      return TimeoutError("operation " + op.name + " did not finish in time");
    }
    TPUFLEET_ASSIGN_OR_RETURN(op, provider.GetOperation(op.name));
  }
  return op.error;
}

}  // namespace tpufleet
