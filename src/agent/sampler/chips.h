// The chips of a sample: TPUs as host::ScanTpu finds them (sysfs) with their holders
// (the processes that have the device node or the libtpu lockfile open), each chip's
// runtime metrics as the libtpu processes serve them, and GPUs as NVML reports them.
//
// The readers of runtime metrics and of GPUs are seams (ChipMetricsReader, GpuReader):
// the agent's are tpu_metrics' gRPC client and host::Nvml, wired in src/app; tests give
// fakes. A port that answers nothing (Unavailable: no job serves metrics there) or
// fails leaves its chips' metrics absent.
//
// Thread-safety: the functions are stateless; a reader is used by one thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/host/nvml.h"
#include "agent/host/tpu_scan.h"
#include "agent/host/tpu_verdict.h"
#include "core/worker_sample.h"
#include "tpu_metrics/runtime_metrics.h"
#include "tpu_metrics/runtime_metrics_client.h"
#include "util/status.h"

namespace tpufleet::agent::sampler {

/// How long one port may take to answer: the sampler reads every port each second.
inline constexpr std::chrono::milliseconds kMetricsDeadline{300};
/// A holder's command as a sample carries it (core/worker_sample.h).
inline constexpr size_t kMaxHolderCommandBytes = 256;

/// Reads the runtime metrics served on 127.0.0.1:port (tpu_metrics' client, or a fake).
class ChipMetricsReader {
 public:
  ChipMetricsReader() = default;
  ChipMetricsReader(const ChipMetricsReader&) = delete;
  ChipMetricsReader& operator=(const ChipMetricsReader&) = delete;
  virtual ~ChipMetricsReader() = default;
  virtual Result<std::vector<tpu_metrics::RuntimeChipMetrics>> Read(
      int port, std::chrono::milliseconds deadline) = 0;
};

/// The agent's: tpu_metrics::RuntimeMetricsClient.
class GrpcChipMetricsReader final : public ChipMetricsReader {
 public:
  Result<std::vector<tpu_metrics::RuntimeChipMetrics>> Read(
      int port, std::chrono::milliseconds deadline) override {
    return client_.Read(port, deadline);
  }

 private:
  tpu_metrics::RuntimeMetricsClient client_;
};

/// Reads the GPUs: one ChipSample each (kind "gpu"), holders with their pid only.
class GpuReader {
 public:
  GpuReader() = default;
  GpuReader(const GpuReader&) = delete;
  GpuReader& operator=(const GpuReader&) = delete;
  virtual ~GpuReader() = default;
  virtual Result<std::vector<ChipSample>> Read() = 0;
};

/// The agent's: host::Nvml (one that could not load NVML reads no GPUs).
class NvmlGpuReader final : public GpuReader {
 public:
  explicit NvmlGpuReader(host::Nvml& nvml) : nvml_(nvml) {}
  Result<std::vector<ChipSample>> Read() override { return nvml_.Read(); }

 private:
  host::Nvml& nvml_;
};

/// The TPU chips of `facts` (one per accelerator, numbered as the devices op numbers
/// them) with their holders; `live` names each holder's job.
std::vector<ChipSample> TpuChips(const host::TpuFacts& facts, const host::LiveJobPids& live);

/// Adds the metrics read on `port` to the chips by device id (a device no scan found
/// becomes a chip of its own, with no device node); a chip that already has metrics from
/// an earlier port keeps them.
void AddDeviceMetrics(std::vector<ChipSample>& chips, int port,
                      const std::vector<tpu_metrics::RuntimeChipMetrics>& metrics);

/// Names the holders of GPU chips (their pid only, from NVML): user, command and job,
/// as the TPUs' holders are named.
void NameGpuHolders(std::vector<ChipSample>& gpus, const host::HostPaths& paths,
                    const host::LiveJobPids& live);

}  // namespace tpufleet::agent::sampler
