// Waiting on the cloud: polls with a growing pause (from UpOptions::poll_min up to
// poll_max) against a deadline on the injected clock, so tests never sleep for real.
//
// Thread-safety: a Poller belongs to one thread; WaitOperation may run on any.
#pragma once

#include <chrono>
#include <optional>

#include "provider/provider.h"
#include "util/clock.h"
#include "util/status.h"

namespace tpufleet {

class Poller {
 public:
  Poller(Clock& clock, std::chrono::milliseconds min, std::chrono::milliseconds max,
         std::chrono::seconds budget);

  /// Sleeps the next pause; false (without sleeping) once the budget is spent.
  bool Pause();
  /// Pause for a loop that does not sleep here: when the next poll is due, `now` plus the
  /// next pause (cut at the deadline); the pause grows as Pause's does. nullopt once the
  /// budget is spent.
  std::optional<Clock::MonoTime> Next(Clock::MonoTime now);
  bool Expired() const;
  Clock& clock() const { return clock_; }

 private:
  Clock& clock_;
  std::chrono::milliseconds next_;
  const std::chrono::milliseconds max_;
  const Clock::MonoTime deadline_;
};

/// Polls `op` until it is done and returns its error (OK on success); Timeout when the
/// poller's budget runs out first.
Status WaitOperation(CloudProvider& provider, CloudOperation op, Poller& poller);

}  // namespace tpufleet
