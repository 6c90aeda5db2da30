#include "agent/sampler/sampler.h"

#include <unistd.h>

#include <set>

#include "core/diagnosis.h"

namespace tpufleet::agent::sampler {
namespace {

int64_t UnixMs(const Clock& clock) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock.Now().time_since_epoch())
      .count();
}

}  // namespace

Sampler::Sampler(Clock& clock, SamplerOptions options, ChipMetricsReader* metrics,
                 GpuReader* gpus)
    : clock_(clock),
      options_(std::move(options)),
      metrics_(metrics),
      gpus_(gpus),
      ticks_per_second_(static_cast<double>(sysconf(_SC_CLK_TCK))) {}

Sampler::~Sampler() { Stop(); }

void Sampler::SetJobs(std::vector<JobRef> jobs) {
  std::lock_guard<std::mutex> l(mu_);
  jobs_ = std::move(jobs);
}

WorkerSample Sampler::Sample() {
  std::vector<JobRef> jobs;
  {
    std::lock_guard<std::mutex> l(mu_);
    jobs = jobs_;
  }
  WorkerSample s;
  s.time_unix_ms = UnixMs(clock_);
  // Each reading's rates are over the time between it and the one before: a loaded host
  // may take a while between the two, and a rate over another span would be wrong.
  auto since = [this](Clock::MonoTime& before) {
    const Clock::MonoTime now = clock_.MonotonicNow();
    const double seconds = std::chrono::duration<double>(now - before).count();
    before = now;
    return seconds;
  };
  HostCounters host = ReadHostCounters(options_.host);
  const double host_seconds = since(host_at_);
  s.host = HostSampleOf(host_before_ ? &*host_before_ : nullptr, host, host_seconds);
  std::map<std::string, JobCounters> counters = ReadJobCounters(options_.host, jobs);
  const double seconds = since(jobs_at_);
  host::LiveJobPids live;
  std::set<int> ports = {tpu_metrics::kDefaultMetricsPort};
  for (const JobRef& job : jobs) {
    ports.insert(job.metrics_ports.begin(), job.metrics_ports.end());
    auto now = counters.find(job.id);
    if (now == counters.end()) {
      continue;
    }
    auto before = jobs_before_.find(job.id);
    s.jobs.push_back(JobSampleOf(job, before == jobs_before_.end() ? nullptr : &before->second,
                                 now->second, seconds, ticks_per_second_));
    for (pid_t pid : now->second.pids) {
      live[pid] = job.id;
    }
  }

  s.chips = TpuChips(host::ScanTpu(options_.host), live);
  if (metrics_ != nullptr) {
    for (int port : ports) {
      Result<std::vector<tpu_metrics::RuntimeChipMetrics>> read = metrics_->Read(port, kMetricsDeadline);
      if (read.ok()) {
        AddDeviceMetrics(s.chips, port, *read);
      }
    }
  }
  if (gpus_ != nullptr) {
    Result<std::vector<ChipSample>> gpus = gpus_->Read();
    if (gpus.ok()) {
      NameGpuHolders(*gpus, options_.host, live);
      s.chips.insert(s.chips.end(), gpus->begin(), gpus->end());
    }
  }

  host_before_ = std::move(host);
  jobs_before_ = std::move(counters);
  std::lock_guard<std::mutex> l(mu_);
  if (IsInUse(s)) {
    idle_since_unix_ms_ = 0;
  } else if (idle_since_unix_ms_ == 0) {
    idle_since_unix_ms_ = s.time_unix_ms;
  }
  history_.Add(s);
  latest_ = s;
  return s;
}

void Sampler::Start() {
  std::lock_guard<std::mutex> l(mu_);
  if (!thread_.joinable()) {
    stop_ = false;
    thread_ = std::thread([this] { Run(); });
  }
}

void Sampler::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void Sampler::Run() {
  // Real time, not clock_: the thread waits in a condition variable that Stop wakes.
  auto next = std::chrono::steady_clock::now();
  while (true) {
    Sample();
    next += options_.interval;
    const auto now = std::chrono::steady_clock::now();
    if (next < now) {
      next = now;  // a slow sample: the next one starts at once, none are made up
    }
    std::unique_lock<std::mutex> l(mu_);
    if (wake_.wait_until(l, next, [this] { return stop_; })) {
      return;
    }
  }
}

MetricsReport Sampler::Report(const MetricsQuery& query) const {
  const int64_t now = UnixMs(clock_);
  std::lock_guard<std::mutex> l(mu_);
  MetricsReport r;
  r.sample = latest_;
  if (latest_.time_unix_ms == 0) {
    return r;
  }
  r.window = SummarizeWindow(history_.Window(now, kDiagnosisWindow), idle_since_unix_ms_);
  History::Points points = history_.Query(query, now);
  r.history = std::move(points.points);
  r.step_seconds = points.step_seconds;
  return r;
}

}  // namespace tpufleet::agent::sampler
