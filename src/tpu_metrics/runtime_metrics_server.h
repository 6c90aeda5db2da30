// RuntimeMetricsServer: libtpu's RuntimeMetricService (runtime_metrics.h) served from a
// callback, for the emulator's stand-in for a JAX program (tpu-standin) and for tests:
// what a framework process that loaded libtpu serves while it runs.
//
// It listens on 127.0.0.1:PORT with gRPC's local credentials (LOCAL_TCP), as libtpu
// does: only a peer on this host is served, in plaintext HTTP/2. It answers
// GetRuntimeMetric for the six metrics of runtime_metrics.h, keyed as libtpu keys them
// (the device id as an int attribute; the HLO queue by a key-value list of
// device_ordinal and core_type, one gauge per core), and ListSupportedMetrics with
// their names (its filter a regular expression found anywhere in a name). Any other
// metric is NOT_FOUND ("metric NAME is not supported"), which is what tpufleet's
// client takes for a metric an older libtpu lacks. A device whose value is absent has
// no entry in that metric.
//
// This header names no gRPC or protobuf type.
//
// Thread-safety: Start and the destructor from one thread. The callback is called from
// gRPC's threads, several at a time: it must be thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "tpu_metrics/runtime_metrics.h"
#include "util/status.h"

namespace tpufleet::tpu_metrics {

struct RuntimeMetricsServerOptions {
  /// The port on 127.0.0.1; 0: one the kernel picks (tests), see port().
  int port = kDefaultMetricsPort;
  /// The values to serve, asked anew for every call.
  std::function<std::vector<RuntimeChipMetrics>()> metrics;
  /// The HLO queue's device_ordinal as an int attribute, as older libtpu sends it
  /// (newer ones send a string).
  bool int_device_ordinal = false;
  /// The cores each device's HLO queue is spread over (one gauge each, the first a
  /// TensorCore, the others SparseCores, as on v5p): the client sums them.
  int queue_cores = 1;
};

class RuntimeMetricsServer {
 public:
  /// Listens and serves until destroyed. Unavailable "127.0.0.1:PORT is in use…" when
  /// the port cannot be had; InvalidArgument for a bad port, no callback or no core.
  static Result<std::unique_ptr<RuntimeMetricsServer>> Start(RuntimeMetricsServerOptions options);

  /// Stops listening and cancels the calls in flight.
  ~RuntimeMetricsServer();
  RuntimeMetricsServer(const RuntimeMetricsServer&) = delete;
  RuntimeMetricsServer& operator=(const RuntimeMetricsServer&) = delete;

  /// The port it listens on.
  int port() const { return port_; }

 private:
  struct Impl;
  RuntimeMetricsServer(std::unique_ptr<Impl> impl, int port);

  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace tpufleet::tpu_metrics
