// The TPU runtime metrics tpufleet reads from libtpu's RuntimeMetricService (the gRPC
// service a framework process that loaded libtpu serves on 127.0.0.1:8431 and the ports
// of TPU_RUNTIME_METRICS_PORTS; proto/tpu_metric_service.proto): their names, and the
// values of one device as the client returns them and the server serves them.
//
// The client (runtime_metrics_client.h) lives in the node agent; the server
// (runtime_metrics_server.h) in the emulator's stand-in for a JAX program and in tests.
// Neither header names a gRPC or protobuf type: only this module's .cc files see them.
//
// Thread-safety: plain values and constants.
#pragma once

#include <cstdint>
#include <optional>

namespace tpufleet::tpu_metrics {

/// The metrics read, as libtpu names them (tpu-metrics-wire.md). The first five are
/// keyed by the device id in `attribute.value.int_attr`, one gauge per device; the HLO
/// queue by a key-value list of `device_ordinal` (a string in newer libtpu, an int in
/// older) and `core_type`, one gauge per core.
inline constexpr const char* kDutyCycle = "tpu.runtime.tensorcore.dutycycle.percent";
inline constexpr const char* kHbmUsage = "tpu.runtime.hbm.memory.usage.bytes";
inline constexpr const char* kHbmTotal = "tpu.runtime.hbm.memory.total.bytes";
inline constexpr const char* kHbmBandwidth = "tpu.runtime.hbm.utilization.percent";
inline constexpr const char* kIdleDuration = "tpu.runtime.tensorcore.idle_duration.seconds";
inline constexpr const char* kHloQueue = "hlo.queue.size.gauge";

/// The device-id attribute's key ("device-id" in the tool's tests; clients key by the value).
inline constexpr const char* kDeviceIdKey = "device-id";
/// The HLO queue's key-value list keys.
inline constexpr const char* kDeviceOrdinalKey = "device_ordinal";
inline constexpr const char* kCoreTypeKey = "core_type";

/// The default port of libtpu's metrics server, which every job without
/// TPU_RUNTIME_METRICS_PORTS uses.
inline constexpr int kDefaultMetricsPort = 8431;

/// One device's runtime metrics (a chip, on every family but v2/v3, whose devices are
/// cores). A value the process did not report is absent, never 0.
struct RuntimeChipMetrics {
  int device_id = 0;
  std::optional<double> duty_cycle_percent;     // kDutyCycle, 0–100
  std::optional<int64_t> hbm_usage_bytes;       // kHbmUsage
  std::optional<int64_t> hbm_total_bytes;       // kHbmTotal
  std::optional<double> hbm_bandwidth_percent;  // kHbmBandwidth, 0–100
  std::optional<double> idle_seconds;           // kIdleDuration
  std::optional<int64_t> hlo_queue;             // kHloQueue, summed over the device's cores

  bool operator==(const RuntimeChipMetrics&) const = default;
};

}  // namespace tpufleet::tpu_metrics
