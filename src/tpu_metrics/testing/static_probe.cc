// tpu_metrics_static_probe PORT: the client linked as the node agent links it (fully
// static, gRPC's unsecure build), reading once and printing each device on a line, or
// the error. runtime_metrics_test runs it against a server with local credentials.
#include <chrono>
#include <cstdio>
#include <string>

#include "tpu_metrics/runtime_metrics_client.h"
#include "util/strings.h"

namespace {

template <typename T>
std::string Field(const char* name, const std::optional<T>& v) {
  return v ? std::string(" ") + name + "=" + std::to_string(*v) : "";
}

}  // namespace

int main(int argc, char** argv) {
  long long port = 0;
  if (argc != 2 || !tpufleet::ParseInt(argv[1], &port)) {
    std::fprintf(stderr, "usage: tpu_metrics_static_probe PORT\n");
    return 2;
  }
  tpufleet::tpu_metrics::RuntimeMetricsClient client;
  auto read = client.Read(static_cast<int>(port), std::chrono::seconds(5));
  if (!read.ok()) {
    std::printf("%s\n", read.status().ToString().c_str());
    return 1;
  }
  for (const tpufleet::tpu_metrics::RuntimeChipMetrics& d : *read) {
    std::printf("device=%d%s%s%s%s%s%s\n", d.device_id, Field("duty", d.duty_cycle_percent).c_str(),
                Field("hbm", d.hbm_usage_bytes).c_str(), Field("total", d.hbm_total_bytes).c_str(),
                Field("bandwidth", d.hbm_bandwidth_percent).c_str(),
                Field("idle", d.idle_seconds).c_str(), Field("queue", d.hlo_queue).c_str());
  }
  return 0;
}
