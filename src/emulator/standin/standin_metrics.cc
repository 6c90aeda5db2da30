#include "emulator/standin/standin_metrics.h"

#include <algorithm>

#include "util/strings.h"

namespace tpufleet::emulator::standin {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

// A mode's value: burn, input-bound, idle.
template <typename T>
T ByMode(Mode mode, T burn, T input_bound, T idle) {
  return mode == Mode::kBurn ? burn : mode == Mode::kInputBound ? input_bound : idle;
}

}  // namespace

std::vector<tpu_metrics::RuntimeChipMetrics> MetricsFor(const StandinOptions& o,
                                                        const std::vector<Chip>& chips,
                                                        std::chrono::duration<double> running) {
  const double duty = o.duty_cycle.value_or(ByMode(o.mode, 95.0, 10.0, 0.0));
  std::vector<tpu_metrics::RuntimeChipMetrics> out;
  for (const Chip& c : chips) {
    tpu_metrics::RuntimeChipMetrics m;
    m.device_id = c.index;
    m.duty_cycle_percent = duty;
    m.hbm_total_bytes = c.hbm_gib * kGiB;
    double hbm_gib = o.hbm_gib.value_or(ByMode(o.mode, c.hbm_gib / 2.0, c.hbm_gib / 2.0, 0.0));
    m.hbm_usage_bytes = std::min<int64_t>(*m.hbm_total_bytes,
                                          static_cast<int64_t>(hbm_gib * static_cast<double>(kGiB)));
    m.hbm_bandwidth_percent = o.hbm_bandwidth.value_or(ByMode(o.mode, 45.0, 3.0, 0.0));
    m.idle_seconds = std::max(0.0, running.count()) * (1 - duty / 100);
    m.hlo_queue = o.hlo_queue.value_or(ByMode<int64_t>(o.mode, 2, 0, 0));
    out.push_back(m);
  }
  return out;
}

Result<int> MetricsPortFor(const EnvLookup& env) {
  std::optional<std::string> ports = env("TPU_RUNTIME_METRICS_PORTS");
  if (!ports || Trim(*ports).empty()) {
    return tpu_metrics::kDefaultMetricsPort;
  }
  std::string first(Trim(Split(*ports, ',').front()));
  long long port = 0;
  if (!ParseInt(first, &port) || port < 1 || port > 65535) {
    return InvalidArgumentError("TPU_RUNTIME_METRICS_PORTS=" + *ports + ": '" + first +
                                "' is not a port (1-65535)");
  }
  return static_cast<int>(port);
}

Result<std::unique_ptr<tpu_metrics::RuntimeMetricsServer>> ServeMetrics(const StandinOptions& options,
                                                                       const std::vector<Chip>& chips,
                                                                       int port) {
  tpu_metrics::RuntimeMetricsServerOptions served;
  served.port = port;
  served.metrics = [options, chips, start = std::chrono::steady_clock::now()] {
    return MetricsFor(options, chips, std::chrono::steady_clock::now() - start);
  };
  return tpu_metrics::RuntimeMetricsServer::Start(std::move(served));
}

}  // namespace tpufleet::emulator::standin
