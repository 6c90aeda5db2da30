// What the node agent measures of its worker: one sample a second, the summary of the
// last kDiagnosisWindow (core/diagnosis.h), points of history. The agent (agent/sampler)
// fills them, core/diagnosis.h judges them, the protocol's `metrics` op carries them
// (api/metrics.h, docs/agent-protocol.md) and `tpufleet top` shows them. They live in
// core so that the agent, the verdicts and the CLI share one definition.
//
// Each struct's comment names its JSON object (api/metrics.h writes it). A measurement
// the worker could not take is absent (nullopt), never 0: "no job serves runtime
// metrics" and "the TPU is idle" are different facts.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tpufleet {

/// A process using a chip: {"pid", "user", "command", "job"} (api::TpuHolder is this
/// type).
struct ChipHolder {
  int pid = 0;
  std::string user;
  std::string command;  // /proc/PID/cmdline, arguments joined by spaces, at most 256 bytes
  std::string job;      // the agent's job id, "" for a process of no job
};

/// One accelerator chip at one instant: {"index", "kind", "device", "holders"} and,
/// written only when set, {"duty_cycle_percent", "hbm_used_bytes", "hbm_total_bytes",
/// "hbm_bandwidth_percent", "idle_seconds", "hlo_queue", "port"}.
struct ChipSample {
  int index = 0;             // 0, 1, … as the agent's devices op numbers them
  std::string kind;          // "tpu" or "gpu"
  std::string device;        // "/dev/accel0", "/dev/vfio/3", "/dev/nvidia0"
  std::vector<ChipHolder> holders;
  // TPU: tpu.runtime.tensorcore.dutycycle.percent; GPU: nvmlUtilization_t.gpu.
  std::optional<double> duty_cycle_percent;
  std::optional<int64_t> hbm_used_bytes;   // tpu.runtime.hbm.memory.usage.bytes; GPU: used
  std::optional<int64_t> hbm_total_bytes;  // tpu.runtime.hbm.memory.total.bytes; GPU: total
  // TPU: tpu.runtime.hbm.utilization.percent; GPU: nvmlUtilization_t.memory.
  std::optional<double> hbm_bandwidth_percent;
  std::optional<double> idle_seconds;  // tpu.runtime.tensorcore.idle_duration.seconds
  std::optional<int64_t> hlo_queue;    // hlo.queue.size.gauge, summed over the chip's cores
  std::optional<int> port;             // the runtime metrics port that answered for it
};

/// The host at one instant: {"cpus", "cpu_percent", "memory_used_bytes",
/// "memory_total_bytes", "logins"} and, written only when set (from the second sample
/// on), {"disk_read_bytes_per_second", "disk_write_bytes_per_second",
/// "net_rx_bytes_per_second", "net_tx_bytes_per_second"}.
struct HostSample {
  int cpus = 0;              // online CPUs
  double cpu_percent = 0;    // busy share of all CPUs since the last sample, 0–100
  int64_t memory_used_bytes = 0;   // MemTotal - MemAvailable
  int64_t memory_total_bytes = 0;
  int logins = 0;            // interactive sessions (utmp USER_PROCESS with a live pid)
  std::optional<double> disk_read_bytes_per_second;   // whole disks of /proc/diskstats
  std::optional<double> disk_write_bytes_per_second;
  std::optional<double> net_rx_bytes_per_second;      // /proc/net/dev, loopback excluded
  std::optional<double> net_tx_bytes_per_second;
};

/// A running job's use of the host: {"id", "user", "cpu_percent", "cpu_limit_percent",
/// "busiest_thread_percent", "memory_bytes"}. Percent of one CPU: a job busy on 3 CPUs
/// is at 300.
struct JobSample {
  std::string id;
  std::string user;
  double cpu_percent = 0;             // every process of the job (its keeper's session)
  double cpu_limit_percent = 0;       // 100 × the CPUs it may run on (affinity, cpu.max)
  double busiest_thread_percent = 0;  // its busiest thread: 100 is a saturated GIL
  int64_t memory_bytes = 0;           // resident, summed
};

/// One sample of the worker: {"time_unix_ms", "chips", "host", "jobs"}.
struct WorkerSample {
  int64_t time_unix_ms = 0;
  std::vector<ChipSample> chips;
  HostSample host;
  std::vector<JobSample> jobs;  // running jobs only
};

/// The summary of the samples of the last `seconds` that the verdicts need:
/// {"seconds", "samples", "input_bound_fraction", "idle_since_unix_ms"} and, written only
/// when set, {"duty_cycle_percent", "hlo_queue", "job", "job_cpu_percent",
/// "job_cpu_limit_percent", "job_busiest_thread_percent"}.
struct WindowSummary {
  int seconds = 0;   // the window asked for (core/diagnosis.h's kDiagnosisWindow)
  int samples = 0;   // samples in it
  std::optional<double> duty_cycle_percent;  // mean over the chips and samples that had one
  std::optional<double> hlo_queue;           // mean, same
  /// Share of the samples (0–1) in which the TPU job was starved: core/diagnosis.h's
  /// IsInputBoundSample held.
  double input_bound_fraction = 0;
  /// The job that held the chips in most of the samples (in a sample, the one with
  /// most CPU when several did; of two as often, the later), and its mean CPU over the
  /// samples it ran in. "" when no job of the agent held a chip.
  std::string job;
  std::optional<double> job_cpu_percent;
  std::optional<double> job_cpu_limit_percent;
  std::optional<double> job_busiest_thread_percent;
  /// Since when nothing has used the worker (no running job, no login, no holder, no
  /// duty cycle above 0); 0 while something does. An agent that restarts starts counting
  /// anew.
  int64_t idle_since_unix_ms = 0;
};

/// A point of history: {"time_unix_ms"} and, written only when set,
/// {"duty_cycle_percent", "hbm_used_bytes", "hbm_total_bytes", "cpu_percent",
/// "memory_used_bytes"}: means over the chips (duty), sums (HBM), the host's CPU and
/// memory, each averaged over the point's step.
struct HistoryPoint {
  int64_t time_unix_ms = 0;
  std::optional<double> duty_cycle_percent;
  std::optional<int64_t> hbm_used_bytes;
  std::optional<int64_t> hbm_total_bytes;
  std::optional<double> cpu_percent;
  std::optional<int64_t> memory_used_bytes;
};

/// The most history a `metrics` request may ask for: the 24 hours the agent keeps.
inline constexpr int kMaxHistorySeconds = 86400;
/// The widest step a request may ask for: an hour (a day in 24 points).
inline constexpr int kMaxStepSeconds = 3600;
/// The most points one answer carries: 3600 points of at most ~200 bytes each keep the
/// answer well inside the protocol's 1 MiB line (api/agent.h kMaxAgentLineBytes). The
/// agent widens the step to history_seconds / kMaxHistoryPoints (rounded up) when the
/// step asked for would give more.
inline constexpr int kMaxHistoryPoints = 3600;

/// The `metrics` op's request fields: {"history_seconds", "step_seconds"}; the history
/// of the last history_seconds (0: none; at most kMaxHistorySeconds), at least
/// step_seconds apart (0: the agent's own resolution for that age; at most
/// kMaxStepSeconds), in at most kMaxHistoryPoints points.
struct MetricsQuery {
  int history_seconds = 0;
  int step_seconds = 0;
};

/// The `metrics` op's answer body: {"sample", "window", "history", "step_seconds"}.
/// `sample` is the latest; `history` is oldest first; step_seconds is its spacing.
struct MetricsReport {
  WorkerSample sample;
  WindowSummary window;
  std::vector<HistoryPoint> history;
  int step_seconds = 0;
};

}  // namespace tpufleet
