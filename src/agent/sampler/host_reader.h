// The host's counters as the kernel keeps them (CPU ticks, memory, disk and network
// bytes, logins), read in one go, and the HostSample of two readings: rates are the
// deltas over the time between them.
//
// Where it reads (all under host::HostPaths): proc/stat, proc/meminfo, proc/diskstats
// (the whole disks of sys/block: entries with a `device` link, so partitions and
// loop, ram, zram and device-mapper devices do not count twice), proc/net/dev (not
// loopback), and ROOT/run/utmp (USER_PROCESS records whose pid is alive in proc/).
// A file that cannot be read leaves its counters absent; the sample then says 0 for
// CPU and memory and leaves the rates out.
//
// Thread-safety: stateless.
#pragma once

#include <optional>

#include "agent/host/host_paths.h"
#include "agent/sampler/proc_parsers.h"
#include "core/worker_sample.h"

namespace tpufleet::agent::sampler {

/// utmp, where login(1) and sshd record sessions (glibc's _PATH_UTMP).
inline constexpr const char* kUtmpPath = "/run/utmp";

struct HostCounters {
  std::optional<CpuTimes> cpu;
  std::optional<MemInfo> memory;
  std::optional<DeviceIo> disk;
  std::optional<DeviceIo> net;
  int logins = 0;
};

HostCounters ReadHostCounters(const host::HostPaths& paths);

/// The sample of `now`, with rates against `before` taken `seconds` earlier; without
/// `before` (the first sample) CPU is the share since boot and the rates are absent.
/// A rate counts the devices of both readings whose counters did not go back (a device
/// replaced under the same name restarts from 0): a device that came or went between
/// them adds nothing.
HostSample HostSampleOf(const HostCounters* before, const HostCounters& now, double seconds);

}  // namespace tpufleet::agent::sampler
