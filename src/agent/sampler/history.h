// History: what the agent keeps of its samples, in constant memory.
//
//   - the raw WorkerSamples of the last kDiagnosisWindow (core/diagnosis.h), which the
//     window summary is computed from (at most kMaxWindowSamples of them);
//   - one point a second for the last kFineSpan (an hour): every sample of a second is
//     averaged into that second's point;
//   - one point every kCoarseStep for the kCoarseSpan before (23 hours): an hour-old
//     second's point is folded into its 10-second point as it leaves the fine ring.
// Both rings are allocated whole when the History is made, and a point is a packed
// 40 bytes (absent values as NaN or -1), so an agent that has run a day uses no more
// memory than one that has just started: MemoryBytes() says how much, history_test.cc
// pins it.
//
// A query (MetricsQuery) takes the points of its last history_seconds at a step of at
// least step_seconds; a step coarser than the points' own averages them (a mean of each
// value over the points that have it), a span reaching past the hour is given at the
// coarse step, and a step that would give more than kMaxHistoryPoints points is widened
// to history_seconds / kMaxHistoryPoints (core/worker_sample.h: the answer fits a line). Times are the samples' Unix milliseconds; a sample older than the
// last one added is dropped (the wall clock was set back: the history moves on, it is
// not rewritten).
//
// Thread-safety: none; the sampler guards its History with its mutex.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "core/worker_sample.h"

namespace tpufleet::agent::sampler {

/// An hour of points a second apart: what `top` shows live and a sparkline of minutes.
inline constexpr std::chrono::seconds kFineSpan{3600};
/// Older points, 10 s apart, for the 23 hours before (the "last 24 hours").
inline constexpr std::chrono::seconds kCoarseStep{10};
inline constexpr std::chrono::seconds kCoarseSpan{23 * 3600};
inline constexpr size_t kFinePoints = 3600;
inline constexpr size_t kCoarsePoints = 23 * 3600 / 10;
/// The raw samples kept for the window, whatever the interval (serve
/// --sample-interval 100 in tests fills the window with 600).
inline constexpr size_t kMaxWindowSamples = 1200;

class History {
 public:
  History();

  /// Adds the next sample (see above for one older than the last).
  void Add(const WorkerSample& sample);

  /// The raw samples of the last `window` before `now_unix_ms`, oldest first.
  std::vector<WorkerSample> Window(int64_t now_unix_ms, std::chrono::seconds window) const;

  /// The points of the last history_seconds before `now_unix_ms`, oldest first, and
  /// their step in seconds (see above). Empty (step 0) when history_seconds is 0.
  struct Points {
    std::vector<HistoryPoint> points;
    int step_seconds = 0;
  };
  Points Query(const MetricsQuery& query, int64_t now_unix_ms) const;

  /// The bytes the rings and the window hold now (their allocations, not counting the
  /// chips' and jobs' strings of the raw samples).
  size_t MemoryBytes() const;

 private:
  // A point, packed: NaN for an absent double, -1 for an absent count of bytes.
  struct Packed {
    int64_t time_unix_ms = 0;
    float duty_cycle_percent = 0;
    float cpu_percent = 0;
    int64_t hbm_used_bytes = -1;
    int64_t hbm_total_bytes = -1;
    int64_t memory_used_bytes = -1;
  };
  // A fixed-capacity ring of points, oldest first.
  class Ring {
   public:
    explicit Ring(size_t capacity) : slots_(capacity) {}
    size_t size() const { return size_; }
    size_t capacity() const { return slots_.size(); }
    const Packed& at(size_t i) const { return slots_[(first_ + i) % slots_.size()]; }
    const Packed& front() const { return at(0); }
    void PushBack(const Packed& p);
    void PopFront();

   private:
    std::vector<Packed> slots_;
    size_t first_ = 0;
    size_t size_ = 0;
  };
  // Sums of the points of one step, and their counts.
  struct Accumulator {
    int64_t bucket_unix_ms = -1;  // the step's start; -1: empty
    double duty = 0, cpu = 0, hbm_used = 0, hbm_total = 0, memory = 0;
    int duty_n = 0, cpu_n = 0, hbm_used_n = 0, hbm_total_n = 0, memory_n = 0;
    void Add(const Packed& p);
    Packed Mean() const;
  };

  static Packed PointOf(const WorkerSample& sample);
  static HistoryPoint Unpack(const Packed& p);
  // Moves fine points older than kFineSpan before `now` into the coarse ring, and drops
  // coarse points older than kCoarseSpan before that.
  void Age(int64_t now_unix_ms);
  void AddCoarse(const Packed& fine);

  std::deque<WorkerSample> window_;
  Ring fine_;
  Ring coarse_;
  Accumulator second_;       // the samples of the newest second
  Accumulator coarse_step_;  // the fine points of the coarse step being folded
  int64_t last_unix_ms_ = -1;
};

}  // namespace tpufleet::agent::sampler
