#include "agent/sampler/chips.h"

#include <algorithm>

namespace tpufleet::agent::sampler {
namespace {

ChipHolder HolderOf(const host::ProcessInfo& p, const host::LiveJobPids& live) {
  auto job = live.find(p.pid);
  return {p.pid, p.user, p.command.substr(0, std::min(p.command.size(), kMaxHolderCommandBytes)),
          job == live.end() ? std::string() : job->second};
}

void AddHolder(ChipSample& chip, ChipHolder holder) {
  for (const ChipHolder& h : chip.holders) {
    if (h.pid == holder.pid) {
      return;
    }
  }
  chip.holders.push_back(std::move(holder));
}

}  // namespace

std::vector<ChipSample> TpuChips(const host::TpuFacts& facts, const host::LiveJobPids& live) {
  std::vector<ChipSample> chips;
  for (const host::Accelerator& a : facts.accelerators) {
    ChipSample c;
    c.index = a.index;
    c.kind = "tpu";
    c.device = a.path;
    for (const host::DeviceHolder& h : facts.holders) {
      if (!a.path.empty() && h.device == a.path) {
        AddHolder(c, HolderOf(h.process, live));
      }
    }
    // libtpu's lock holds every chip of the host (it takes the lock only when it uses
    // them all): a process that holds it holds each chip, whether or not a scan caught
    // its device fds.
    for (const host::ProcessInfo& p : facts.lockfile.lockers) {
      if (p.pid > 0) {
        AddHolder(c, HolderOf(p, live));
      }
    }
    chips.push_back(std::move(c));
  }
  return chips;
}

void AddDeviceMetrics(std::vector<ChipSample>& chips, int port,
                      const std::vector<tpu_metrics::RuntimeChipMetrics>& metrics) {
  for (const tpu_metrics::RuntimeChipMetrics& m : metrics) {
    auto chip = std::find_if(chips.begin(), chips.end(),
                             [&](const ChipSample& c) { return c.kind == "tpu" && c.index == m.device_id; });
    if (chip == chips.end()) {
      ChipSample c;
      c.index = m.device_id;
      c.kind = "tpu";
      chips.push_back(std::move(c));
      chip = chips.end() - 1;
    }
    if (chip->port.has_value()) {
      continue;
    }
    chip->port = port;
    chip->duty_cycle_percent = m.duty_cycle_percent;
    chip->hbm_used_bytes = m.hbm_usage_bytes;
    chip->hbm_total_bytes = m.hbm_total_bytes;
    chip->hbm_bandwidth_percent = m.hbm_bandwidth_percent;
    chip->idle_seconds = m.idle_seconds;
    chip->hlo_queue = m.hlo_queue;
  }
  std::stable_sort(chips.begin(), chips.end(),
                   [](const ChipSample& a, const ChipSample& b) { return a.index < b.index; });
}

void NameGpuHolders(std::vector<ChipSample>& gpus, const host::HostPaths& paths,
                    const host::LiveJobPids& live) {
  for (ChipSample& g : gpus) {
    for (ChipHolder& h : g.holders) {
      h = HolderOf(host::ReadProcess(paths, h.pid), live);
    }
  }
}

}  // namespace tpufleet::agent::sampler
