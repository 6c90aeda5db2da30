// RuntimeMetricsClient: reads a TPU's runtime metrics from libtpu's RuntimeMetricService
// (runtime_metrics.h) on a port of this host, the way tpu-info does, for the node
// agent's sampler.
//
// It keeps one gRPC channel per port, to "ipv4:127.0.0.1:PORT" (an address, never a
// name: no resolver, no NSS in the static agent), with insecure credentials: libtpu's
// server uses gRPC's local credentials, which are plaintext HTTP/2 on the wire and
// only check that the peer is on this host. A channel that found no server tries
// again after at most kReconnectBackoff, so a job that starts is read within a sample
// or two. At most kMaxChannels are kept; the least recently read port's goes first.
//
// Read() answers Unavailable when nothing serves on the port (no job uses the TPU
// there: that is "no job", not a failure), Timeout when the server did not answer in
// time. A metric the server does not know (an older libtpu) is left absent.
//
// This header names no gRPC or protobuf type (the channels are behind a pointer), so
// the agent's other code never compiles against them.
//
// Thread-safety: thread-compatible. One object is used by one thread at a time (the
// agent's sampler thread); distinct objects may be used from distinct threads.
#pragma once

#include <chrono>
#include <memory>
#include <string_view>
#include <vector>

#include "tpu_metrics/runtime_metrics.h"
#include "util/status.h"

namespace tpufleet::tpu_metrics {

/// The longest a channel waits before connecting again after it found no server
/// (gRPC's default backoff grows to 120 s: a job started meanwhile would go unseen).
inline constexpr std::chrono::milliseconds kReconnectBackoff{1000};
/// Channels kept: a host runs a handful of libtpu processes, each on a port of its own.
inline constexpr size_t kMaxChannels = 64;

class RuntimeMetricsClient {
 public:
  RuntimeMetricsClient();
  ~RuntimeMetricsClient();
  RuntimeMetricsClient(const RuntimeMetricsClient&) = delete;
  RuntimeMetricsClient& operator=(const RuntimeMetricsClient&) = delete;

  /// The metrics of every device the process on 127.0.0.1:`port` reports, ordered by
  /// device id: the six metrics of runtime_metrics.h, all within `deadline`.
  /// Unavailable: "no runtime metrics on port N (no job using the TPU?)"; Timeout: the
  /// server did not answer within `deadline`; InvalidArgument: not a port.
  Result<std::vector<RuntimeChipMetrics>> Read(int port, std::chrono::milliseconds deadline);

 private:
  struct Channels;
  std::unique_ptr<Channels> channels_;
};

/// The ports to read on a host whose job has this TPU_RUNTIME_METRICS_PORTS value
/// ("8431,8432"; "" when unset): kDefaultMetricsPort first, then the list's ports in
/// its order, each once; entries that are not a port (1–65535) are ignored.
std::vector<int> MetricsPorts(std::string_view tpu_runtime_metrics_ports);

}  // namespace tpufleet::tpu_metrics
