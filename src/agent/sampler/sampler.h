// Sampler: the node agent's samples of its worker, one every interval (a second), and
// what it keeps of them (history.h), for the `metrics` op and `tpufleet-agent sample`.
//
// A sample reads the host (host_reader.h), the running jobs (job_reader.h), the TPU
// chips and their holders (host::ScanTpu), the runtime metrics on port 8431 and on each
// running job's TPU_RUNTIME_METRICS_PORTS (ChipMetricsReader), and the GPUs
// (GpuReader). Rates (CPU, disk, network, each job's CPU) come from the deltas with the
// previous sample. After each sample the sampler tracks since when nothing has used the
// worker (core::IsInUse; 0 while something does), and keeps the sample in its history.
//
// serve runs it on a thread of its own (Start), because a runtime metrics read may
// block for up to kMetricsDeadline per port; serve's loop thread only hands it the jobs
// (SetJobs) and reads reports (Report), each under the mutex, never waiting for a read.
//
// Thread-safety: SetJobs, Latest and Report from any thread; Sample on one thread at a
// time (the sampler's own once Start was called).
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/host/host_paths.h"
#include "agent/sampler/chips.h"
#include "agent/sampler/history.h"
#include "agent/sampler/host_reader.h"
#include "agent/sampler/job_reader.h"
#include "core/worker_sample.h"
#include "util/clock.h"

namespace tpufleet::agent::sampler {

/// How often serve samples unless told (`serve --sample-interval MS`).
inline constexpr std::chrono::milliseconds kDefaultSampleInterval{1000};

struct SamplerOptions {
  host::HostPaths host;  // where the host's files are (tests point sys and dev elsewhere)
  std::chrono::milliseconds interval = kDefaultSampleInterval;
};

class Sampler {
 public:
  /// `metrics` and `gpus` may be null (no TPU metrics, no GPUs); they and `clock` must
  /// outlive the Sampler.
  Sampler(Clock& clock, SamplerOptions options, ChipMetricsReader* metrics, GpuReader* gpus);
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;
  ~Sampler();  // Stop

  /// The running jobs from now on (serve's job table, on each change).
  void SetJobs(std::vector<JobRef> jobs);

  /// Takes a sample now, keeps it, and returns it.
  WorkerSample Sample();

  /// Samples every interval on a thread of its own, from now until Stop.
  void Start();
  void Stop();

  /// The latest sample, the window's summary and the history `query` asks for; an
  /// empty report (time 0) before the first sample.
  MetricsReport Report(const MetricsQuery& query) const;

 private:
  void Run();

  Clock& clock_;
  const SamplerOptions options_;
  ChipMetricsReader* metrics_;
  GpuReader* gpus_;
  const double ticks_per_second_;

  // The sampling thread's own (Sample is one thread's at a time).
  std::optional<HostCounters> host_before_;
  std::map<std::string, JobCounters> jobs_before_;
  Clock::MonoTime host_at_{};  // when host_before_ was read
  Clock::MonoTime jobs_at_{};  // when jobs_before_ was read

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::vector<JobRef> jobs_;      // guarded by mu_
  History history_;               // guarded by mu_
  WorkerSample latest_;           // guarded by mu_
  int64_t idle_since_unix_ms_ = 0;  // guarded by mu_
  bool stop_ = false;             // guarded by mu_
  std::thread thread_;
};

}  // namespace tpufleet::agent::sampler
