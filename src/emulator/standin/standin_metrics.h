// The runtime metrics the stand-in (standin.h) serves while it runs, as a JAX program's
// libtpu serves them: libtpu's RuntimeMetricService (tpu_metrics/runtime_metrics_server.h,
// local credentials) on 127.0.0.1 at the first port of TPU_RUNTIME_METRICS_PORTS, else
// 8431, with a value per chip it holds. The values are what it was told (--duty-cycle,
// --hbm-gib, --hbm-bandwidth, --hlo-queue), else its mode's:
//
//   mode          duty cycle  HBM used   HBM bandwidth  HLO queue
//   burn          95 %        half       45 %           2 (programs wait their turn)
//   input-bound   10 %        half       3 %            0 (the host cannot feed it)
//   idle          0           none       0              0
//
// The TensorCores' idle duration grows from the program's start at the rate the duty
// cycle leaves idle: (1 - duty/100) × seconds running.
//
// A port in use ends the program (exit 1) with one message, as libtpu fails at start when
// another process has its metrics port.
//
// Thread-safety: plain functions; the server calls MetricsFor from gRPC's threads on
// values it copied at start.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "emulator/standin/libtpu_lock.h"
#include "emulator/standin/standin.h"
#include "tpu_metrics/runtime_metrics.h"
#include "tpu_metrics/runtime_metrics_server.h"
#include "util/status.h"

namespace tpufleet::emulator::standin {

/// The metrics of `chips` under `options`, `running` after the program's start (the
/// table above). Every value is set.
std::vector<tpu_metrics::RuntimeChipMetrics> MetricsFor(const StandinOptions& options,
                                                        const std::vector<Chip>& chips,
                                                        std::chrono::duration<double> running);

/// The port to serve on: the first entry of TPU_RUNTIME_METRICS_PORTS, else 8431.
/// InvalidArgument when that entry is not a port.
Result<int> MetricsPortFor(const EnvLookup& env);

/// Serves MetricsFor(options, chips, time since this call) on 127.0.0.1:`port` (0: one
/// the kernel picks) until the server is destroyed. Unavailable when the port is in use.
Result<std::unique_ptr<tpu_metrics::RuntimeMetricsServer>> ServeMetrics(const StandinOptions& options,
                                                                       const std::vector<Chip>& chips,
                                                                       int port);

}  // namespace tpufleet::emulator::standin
