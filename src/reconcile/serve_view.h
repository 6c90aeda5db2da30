// ServeView: what `tpufleet serve`'s HTTP API and /metrics (src/server) read of the
// reconciler while it runs: a snapshot of counters, the last pass's figures and the
// fleets' nodes by state, copied out under a lock. The reconciler publishes a new
// snapshot at the end of every pass (and when a recovery ends); readers never see a
// half-written one and never wait for a pass.
//
// Thread-safety: Snapshot may be called from any thread, at any time.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "util/clock.h"

namespace tpufleet {

struct ServeSnapshot {
  Clock::WallTime last_pass{};        // when the last pass ended ({} before the first)
  double last_pass_cpu_seconds = 0;   // the process's CPU time that pass took
  double last_pass_wall_seconds = 0;  // its wall (monotonic) time: the list calls' waits too
  int64_t passes = 0;                 // passes run since serve started
  int64_t api_calls = 0;              // cloud API calls since serve started (every method)
  int64_t preemptions = 0;            // preemptions (and vanished nodes) detected
  int64_t recoveries = 0;             // recoveries finished (`recovered` recorded)
  /// Each finished recovery's time-to-recover, oldest first (the `recovered` event's
  /// seconds): the histogram's observations.
  std::vector<double> recover_seconds;
  /// fleet -> state name (NodeState::Name, "RECOVERING" while serve recovers it) -> nodes.
  std::map<std::string, std::map<std::string, int>> nodes_by_state;
  std::map<std::string, double> spend_usd;  // fleet -> spent today (UTC day), in USD
  /// What the operator should know now, one line each ("budget reached: …", "waiting
  /// for `tpufleet up` (pid 12)").
  std::vector<std::string> warnings;
};

class ServeView {
 public:
  virtual ~ServeView() = default;
  virtual ServeSnapshot Snapshot() const = 0;
};

/// A ServeView that holds the snapshot the writer last published.
class PublishedServeView final : public ServeView {
 public:
  ServeSnapshot Snapshot() const override {
    std::lock_guard<std::mutex> l(mu_);
    return snapshot_;
  }
  void Publish(ServeSnapshot snapshot) {
    std::lock_guard<std::mutex> l(mu_);
    snapshot_ = std::move(snapshot);
  }

 private:
  mutable std::mutex mu_;
  ServeSnapshot snapshot_;  // guarded by mu_
};

}  // namespace tpufleet
