// nvml_static_probe LIBRARY [HOST_LIBC]: Nvml (agent/host/nvml.h) in a program linked as
// the agent is (-static), so the tests see what a static glibc's dlopen does with a
// libnvidia-ml: one line per GPU, or the one-line reason there are none.
#include <cstdio>
#include <memory>
#include <string>

#include "agent/host/nvml.h"

int main(int argc, char** argv) {
  using tpufleet::agent::host::Nvml;
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: nvml_static_probe LIBRARY [HOST_LIBC]\n");
    return 2;
  }
  std::unique_ptr<Nvml> nvml =
      Nvml::Open({.library = argv[1], .host_libc = argc == 3 ? argv[2] : ""});
  if (!nvml->ok()) {
    std::printf("%s\n", nvml->reason().c_str());
    return 0;
  }
  auto chips = nvml->Read();
  if (!chips.ok()) {
    std::printf("%s\n", chips.status().ToString().c_str());
    return 1;
  }
  for (const tpufleet::ChipSample& c : *chips) {
    std::string pids;
    for (const tpufleet::ChipHolder& h : c.holders) {
      pids += (pids.empty() ? "" : ",") + std::to_string(h.pid);
    }
    std::printf("%s %d %s duty=%.0f bandwidth=%.0f used=%lld total=%lld pids=%s\n",
                c.kind.c_str(), c.index, c.device.c_str(), c.duty_cycle_percent.value_or(-1),
                c.hbm_bandwidth_percent.value_or(-1),
                static_cast<long long>(c.hbm_used_bytes.value_or(-1)),
                static_cast<long long>(c.hbm_total_bytes.value_or(-1)), pids.c_str());
  }
  return 0;
}
