#include "agent/sampler/history.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/diagnosis.h"

namespace tpufleet::agent::sampler {
namespace {

constexpr int64_t kFineStepMs = 1000;
constexpr int64_t kCoarseStepMs = std::chrono::milliseconds(kCoarseStep).count();

int64_t BucketOf(int64_t unix_ms, int64_t step_ms) { return unix_ms - unix_ms % step_ms; }

}  // namespace

void History::Ring::PushBack(const Packed& p) {
  if (size_ == slots_.size()) {
    PopFront();
  }
  slots_[(first_ + size_) % slots_.size()] = p;
  ++size_;
}

void History::Ring::PopFront() {
  first_ = (first_ + 1) % slots_.size();
  --size_;
}

void History::Accumulator::Add(const Packed& p) {
  if (!std::isnan(p.duty_cycle_percent)) {
    duty += p.duty_cycle_percent;
    ++duty_n;
  }
  if (!std::isnan(p.cpu_percent)) {
    cpu += p.cpu_percent;
    ++cpu_n;
  }
  auto add = [](int64_t v, double& sum, int& n) {
    if (v >= 0) {
      sum += static_cast<double>(v);
      ++n;
    }
  };
  add(p.hbm_used_bytes, hbm_used, hbm_used_n);
  add(p.hbm_total_bytes, hbm_total, hbm_total_n);
  add(p.memory_used_bytes, memory, memory_n);
}

History::Packed History::Accumulator::Mean() const {
  constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
  auto mean = [](double sum, int n) {
    return n == 0 ? int64_t{-1} : static_cast<int64_t>(std::llround(sum / n));
  };
  Packed p;
  p.time_unix_ms = bucket_unix_ms;
  p.duty_cycle_percent = duty_n == 0 ? kNan : static_cast<float>(duty / duty_n);
  p.cpu_percent = cpu_n == 0 ? kNan : static_cast<float>(cpu / cpu_n);
  p.hbm_used_bytes = mean(hbm_used, hbm_used_n);
  p.hbm_total_bytes = mean(hbm_total, hbm_total_n);
  p.memory_used_bytes = mean(memory, memory_n);
  return p;
}

History::History() : fine_(kFinePoints), coarse_(kCoarsePoints) {}

History::Packed History::PointOf(const WorkerSample& s) {
  Packed p;
  p.time_unix_ms = s.time_unix_ms;
  double duty = 0;
  int duty_n = 0;
  for (const ChipSample& c : s.chips) {
    if (c.duty_cycle_percent) {
      duty += *c.duty_cycle_percent;
      ++duty_n;
    }
    if (c.hbm_used_bytes) {
      p.hbm_used_bytes = std::max<int64_t>(p.hbm_used_bytes, 0) + *c.hbm_used_bytes;
    }
    if (c.hbm_total_bytes) {
      p.hbm_total_bytes = std::max<int64_t>(p.hbm_total_bytes, 0) + *c.hbm_total_bytes;
    }
  }
  p.duty_cycle_percent =
      duty_n == 0 ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(duty / duty_n);
  p.cpu_percent = static_cast<float>(s.host.cpu_percent);
  p.memory_used_bytes = s.host.memory_used_bytes;
  return p;
}

HistoryPoint History::Unpack(const Packed& p) {
  HistoryPoint h;
  h.time_unix_ms = p.time_unix_ms;
  if (!std::isnan(p.duty_cycle_percent)) {
    h.duty_cycle_percent = p.duty_cycle_percent;
  }
  if (!std::isnan(p.cpu_percent)) {
    h.cpu_percent = p.cpu_percent;
  }
  if (p.hbm_used_bytes >= 0) {
    h.hbm_used_bytes = p.hbm_used_bytes;
  }
  if (p.hbm_total_bytes >= 0) {
    h.hbm_total_bytes = p.hbm_total_bytes;
  }
  if (p.memory_used_bytes >= 0) {
    h.memory_used_bytes = p.memory_used_bytes;
  }
  return h;
}

void History::Add(const WorkerSample& sample) {
  const int64_t t = sample.time_unix_ms;
  if (t < last_unix_ms_) {
    return;
  }
  last_unix_ms_ = t;

  window_.push_back(sample);
  const int64_t window_ms = std::chrono::milliseconds(kDiagnosisWindow).count();
  while (window_.size() > kMaxWindowSamples || window_.front().time_unix_ms <= t - window_ms) {
    window_.pop_front();
  }

  const int64_t second = BucketOf(t, kFineStepMs);
  if (second_.bucket_unix_ms != second) {
    if (second_.bucket_unix_ms >= 0) {
      Age(t);
      fine_.PushBack(second_.Mean());
    }
    second_ = Accumulator{};
    second_.bucket_unix_ms = second;
  }
  second_.Add(PointOf(sample));
}

void History::Age(int64_t now_unix_ms) {
  const int64_t fine_start = now_unix_ms - std::chrono::milliseconds(kFineSpan).count();
  // A full ring makes room the same way, so that no point is dropped unfolded.
  while (fine_.size() > 0 &&
         (fine_.front().time_unix_ms < fine_start || fine_.size() == fine_.capacity())) {
    AddCoarse(fine_.front());
    fine_.PopFront();
  }
  const int64_t coarse_start = fine_start - std::chrono::milliseconds(kCoarseSpan).count();
  while (coarse_.size() > 0 && coarse_.front().time_unix_ms < coarse_start) {
    coarse_.PopFront();
  }
}

void History::AddCoarse(const Packed& fine) {
  const int64_t bucket = BucketOf(fine.time_unix_ms, kCoarseStepMs);
  if (coarse_step_.bucket_unix_ms != bucket) {
    if (coarse_step_.bucket_unix_ms >= 0) {
      coarse_.PushBack(coarse_step_.Mean());
    }
    coarse_step_ = Accumulator{};
    coarse_step_.bucket_unix_ms = bucket;
  }
  coarse_step_.Add(fine);
}

std::vector<WorkerSample> History::Window(int64_t now_unix_ms, std::chrono::seconds window) const {
  const int64_t start = now_unix_ms - std::chrono::milliseconds(window).count();
  std::vector<WorkerSample> out;
  for (const WorkerSample& s : window_) {
    if (s.time_unix_ms > start) {
      out.push_back(s);
    }
  }
  return out;
}

History::Points History::Query(const MetricsQuery& query, int64_t now_unix_ms) const {
  Points out;
  if (query.history_seconds <= 0) {
    return out;
  }
  const int history_seconds = std::min(query.history_seconds, kMaxHistorySeconds);
  const int64_t start = now_unix_ms - int64_t{history_seconds} * 1000;
  // Every point, oldest first: the coarse ring, the coarse step being folded, the fine
  // ring, the newest second.
  std::vector<Packed> all;
  bool coarse = false;
  auto take = [&](const Packed& p, bool is_coarse) {
    if (p.time_unix_ms >= BucketOf(start, is_coarse ? kCoarseStepMs : kFineStepMs)) {
      all.push_back(p);
      coarse = coarse || is_coarse;
    }
  };
  for (size_t i = 0; i < coarse_.size(); ++i) {
    take(coarse_.at(i), true);
  }
  if (coarse_step_.bucket_unix_ms >= 0) {
    take(coarse_step_.Mean(), true);
  }
  for (size_t i = 0; i < fine_.size(); ++i) {
    take(fine_.at(i), false);
  }
  if (second_.bucket_unix_ms >= 0) {
    take(second_.Mean(), false);
  }
  const int native = coarse ? static_cast<int>(kCoarseStep.count()) : 1;
  const int fitting = (history_seconds + kMaxHistoryPoints - 1) / kMaxHistoryPoints;
  out.step_seconds = std::max({query.step_seconds, native, fitting});
  const int64_t step_ms = int64_t{out.step_seconds} * 1000;
  Accumulator acc;
  for (const Packed& p : all) {
    int64_t bucket = BucketOf(p.time_unix_ms, step_ms);
    if (bucket != acc.bucket_unix_ms) {
      if (acc.bucket_unix_ms >= 0) {
        out.points.push_back(Unpack(acc.Mean()));
      }
      acc = Accumulator{};
      acc.bucket_unix_ms = bucket;
    }
    acc.Add(p);
  }
  if (acc.bucket_unix_ms >= 0) {
    out.points.push_back(Unpack(acc.Mean()));
  }
  // The steps' boundaries need not meet the span's: a partial step at each end.
  if (out.points.size() > static_cast<size_t>(kMaxHistoryPoints)) {
    out.points.erase(out.points.begin(),
                     out.points.end() - static_cast<ptrdiff_t>(kMaxHistoryPoints));
  }
  return out;
}

size_t History::MemoryBytes() const {
  return sizeof(*this) + (fine_.capacity() + coarse_.capacity()) * sizeof(Packed) +
         window_.size() * sizeof(WorkerSample);
}

}  // namespace tpufleet::agent::sampler
