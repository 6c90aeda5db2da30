// `tpufleet-agent sample` (serve.h): one report of this worker, without serve.
#include <unistd.h>

#include <cstdio>

#include "agent/flags.h"
#include "agent/host/nvml.h"
#include "agent/sampler/sampler.h"
#include "agent/serve.h"
#include "api/metrics.h"
#include "util/clock.h"
#include "util/strings.h"

namespace tpufleet::agent {
namespace {

// The rates need two samples; a second apart, as serve takes them.
constexpr std::chrono::seconds kSampleSpan{1};

std::string Percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", v);
  return buf;
}

std::string Bytes(int64_t v) { return FormatBytes(static_cast<uint64_t>(std::max<int64_t>(v, 0))); }

// A few lines for a person on the worker.
std::string Text(const MetricsReport& r) {
  const HostSample& h = r.sample.host;
  std::string out = "host: " + std::to_string(h.cpus) + " CPUs " + Percent(h.cpu_percent) +
                    " busy, memory " + Bytes(h.memory_used_bytes) + " of " +
                    Bytes(h.memory_total_bytes) + ", " + std::to_string(h.logins) + " login" +
                    (h.logins == 1 ? "" : "s") + "\n";
  for (const ChipSample& c : r.sample.chips) {
    out += "chip " + std::to_string(c.index) + " " + c.kind + " " +
           (c.device.empty() ? "(no device node)" : c.device) + ":";
    if (c.duty_cycle_percent) {
      out += " duty " + Percent(*c.duty_cycle_percent);
    }
    if (c.hbm_used_bytes && c.hbm_total_bytes) {
      out += ", HBM " + Bytes(*c.hbm_used_bytes) + " of " + Bytes(*c.hbm_total_bytes);
    }
    if (c.hlo_queue) {
      out += ", HLO queue " + std::to_string(*c.hlo_queue);
    }
    if (!c.duty_cycle_percent && !c.hbm_used_bytes) {
      out += " no runtime metrics";
    }
    for (const ChipHolder& holder : c.holders) {
      out += "\n  held by pid " + std::to_string(holder.pid) + " (" + holder.user + "): " +
             holder.command;
    }
    out += "\n";
  }
  return out;
}

}  // namespace

int SampleMain(const std::vector<std::string>& args) {
  const bool json = args.size() == 1 && args[0] == "--json";
  if (!args.empty() && !json) {
    return Complain(kExitUsage, "usage: tpufleet-agent sample [--json]");
  }
  RealClock clock;
  std::unique_ptr<host::Nvml> nvml = host::Nvml::Open();
  sampler::GrpcChipMetricsReader chip_metrics;
  sampler::NvmlGpuReader gpus(*nvml);
  // No jobs: those are serve's (its metrics op names each chip holder's job).
  sampler::Sampler sampler(clock, {}, &chip_metrics, &gpus);
  sampler.Sample();
  clock.SleepFor(kSampleSpan);
  sampler.Sample();
  MetricsReport report = sampler.Report({});
  std::string out = json ? api::ToJson(report) + "\n" : Text(report);
  return write(STDOUT_FILENO, out.data(), out.size()) == static_cast<ssize_t>(out.size())
             ? kExitOk
             : kExitFailed;
}

}  // namespace tpufleet::agent
