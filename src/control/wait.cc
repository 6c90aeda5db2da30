#include "control/wait.h"

#include <algorithm>

namespace tpufleet {

Poller::Poller(Clock& clock, std::chrono::milliseconds min, std::chrono::milliseconds max,
               std::chrono::seconds budget)
    : clock_(clock), next_(min), max_(max), deadline_(clock.MonotonicNow() + budget) {}

bool Poller::Expired() const { return clock_.MonotonicNow() >= deadline_; }

bool Poller::Pause() {
  if (Expired()) {
    return false;
  }
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ -
                                                                    clock_.MonotonicNow());
  clock_.SleepFor(std::min(next_, left));
  next_ = std::min(max_, next_ * 3 / 2);
  return true;
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
