#include "agent/sampler/host_reader.h"

#include <unistd.h>

#include "util/file.h"

namespace tpufleet::agent::sampler {
namespace {

// /proc files are small, but a bound keeps a strange one from costing memory.
constexpr size_t kMaxProcFileBytes = size_t{1} << 20;
// utmp holds a record (384 bytes) per terminal session: thousands fit.
constexpr size_t kMaxUtmpBytes = size_t{4} << 20;

std::optional<std::string> Read(const std::string& path, size_t max = kMaxProcFileBytes) {
  Result<std::string> text = ReadFile(path, max);
  if (!text.ok()) {
    return std::nullopt;
  }
  return *std::move(text);
}

std::optional<double> Rate(const std::optional<DeviceIo>& before,
                           const std::optional<DeviceIo>& now, double seconds,
                           uint64_t IoTotals::*field) {
  if (!before || !now || seconds <= 0) {
    return std::nullopt;
  }
  uint64_t moved = 0;
  for (const auto& [name, counters] : *now) {
    auto then = before->find(name);
    if (then != before->end() && counters.*field >= then->second.*field) {
      moved += counters.*field - then->second.*field;
    }
  }
  return static_cast<double>(moved) / seconds;
}

}  // namespace

HostCounters ReadHostCounters(const host::HostPaths& paths) {
  HostCounters c;
  if (auto text = Read(paths.proc + "/stat")) {
    c.cpu = ParseProcStat(*text);
  }
  if (auto text = Read(paths.proc + "/meminfo")) {
    c.memory = ParseMeminfo(*text);
  }
  if (auto text = Read(paths.proc + "/diskstats")) {
    std::set<std::string> disks;
    for (const std::string& name : ListDirectory(paths.sys + "/block")) {
      if (access((paths.sys + "/block/" + name + "/device").c_str(), F_OK) == 0) {
        disks.insert(name);
      }
    }
    c.disk = ParseDiskstats(*text, disks);
  }
  if (auto text = Read(paths.proc + "/net/dev")) {
    c.net = ParseNetDev(*text);
  }
  const std::string root = paths.root == "/" ? "" : paths.root;
  if (auto bytes = Read(root + kUtmpPath, kMaxUtmpBytes)) {
    for (pid_t pid : ParseUtmpLogins(*bytes)) {
      c.logins += access((paths.proc + "/" + std::to_string(pid)).c_str(), F_OK) == 0 ? 1 : 0;
    }
  }
  return c;
}

HostSample HostSampleOf(const HostCounters* before, const HostCounters& now, double seconds) {
  HostSample s;
  if (now.cpu) {
    s.cpus = now.cpu->cpus;
    uint64_t busy = now.cpu->busy;
    uint64_t total = now.cpu->total;
    if (before != nullptr && before->cpu && now.cpu->total > before->cpu->total &&
        now.cpu->busy >= before->cpu->busy) {
      busy -= before->cpu->busy;
      total -= before->cpu->total;
    }
    s.cpu_percent = total == 0 ? 0 : 100.0 * static_cast<double>(busy) / static_cast<double>(total);
  }
  if (now.memory) {
    s.memory_total_bytes = now.memory->total_bytes;
    s.memory_used_bytes = now.memory->total_bytes - now.memory->available_bytes;
  }
  s.logins = now.logins;
  if (before != nullptr) {
    s.disk_read_bytes_per_second = Rate(before->disk, now.disk, seconds, &IoTotals::read_bytes);
    s.disk_write_bytes_per_second = Rate(before->disk, now.disk, seconds, &IoTotals::write_bytes);
    s.net_rx_bytes_per_second = Rate(before->net, now.net, seconds, &IoTotals::read_bytes);
    s.net_tx_bytes_per_second = Rate(before->net, now.net, seconds, &IoTotals::write_bytes);
  }
  return s;
}

}  // namespace tpufleet::agent::sampler
