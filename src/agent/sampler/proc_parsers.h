// Parsers of the kernel's text the sampler reads each second: /proc/stat, /proc/meminfo,
// /proc/diskstats, /proc/net/dev, /proc/PID/stat (and task/TID/stat, the same format),
// a cgroup v2 cpu.max, and the login records of utmp. Each takes the file's text (or
// bytes) and returns counters as the kernel keeps them (cumulative ticks, sectors,
// bytes); rates are the sampler's, from the deltas of two readings (host_reader.h).
//
// Malformed lines are skipped, never guessed at: a counter the text does not have is
// absent, and a reading with nothing usable is empty.
//
// Thread-safety: pure functions.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace tpufleet::agent::sampler {

/// /proc/stat: the aggregate "cpu" line's ticks (USER_HZ) and the number of "cpuN" lines
/// (the online CPUs).
struct CpuTimes {
  uint64_t busy = 0;   // user nice system irq softirq steal (guest is inside user)
  uint64_t total = 0;  // busy + idle + iowait
  int cpus = 0;
};
std::optional<CpuTimes> ParseProcStat(std::string_view text);

/// /proc/meminfo: MemTotal and MemAvailable, in bytes.
struct MemInfo {
  int64_t total_bytes = 0;
  int64_t available_bytes = 0;
};
std::optional<MemInfo> ParseMeminfo(std::string_view text);

/// Cumulative byte counters of one device.
struct IoTotals {
  uint64_t read_bytes = 0;   // disks: sectors read × 512; network: received
  uint64_t write_bytes = 0;  // disks: sectors written × 512; network: sent
};
/// The counters of each device by name. Kept apart rather than summed: a device that
/// comes or goes between two readings (a container's veth, a hot-plugged disk) would
/// otherwise move the sum by its whole count and spoil the rate of every other device.
using DeviceIo = std::map<std::string, IoTotals>;

/// /proc/diskstats for the devices named in `whole_disks` (the caller's list of real
/// whole disks: /sys/block entries with a `device` link), so that partitions, loop, ram
/// and device-mapper devices do not count a byte twice. Sectors are 512 bytes whatever
/// the disk's own sector size (Documentation/block/stat.rst).
DeviceIo ParseDiskstats(std::string_view text, const std::set<std::string>& whole_disks);

/// /proc/net/dev for every interface but loopback ("lo").
DeviceIo ParseNetDev(std::string_view text);

/// What the sampler needs of /proc/PID/stat (or /proc/PID/task/TID/stat).
struct PidStat {
  pid_t session = 0;        // field 6
  uint64_t cpu_ticks = 0;   // utime + stime (fields 14, 15)
  uint64_t child_ticks = 0; // cutime + cstime (16, 17): its children that it waited for
  uint64_t start_ticks = 0; // field 22, since boot
  int64_t rss_pages = 0;    // field 24
};
/// The command name may hold spaces and parentheses: the fields start after the last ')'.
std::optional<PidStat> ParsePidStat(std::string_view text);

/// /proc/PID/task/TID/schedstat ("RUN_NS WAIT_NS SLICES"): the nanoseconds the thread
/// ran plus those it waited on a run queue; nullopt for anything else.
std::optional<uint64_t> ParseSchedstatWanted(std::string_view text);

/// A cgroup v2 cpu.max ("QUOTA PERIOD", or "max PERIOD"): the CPUs the quota allows
/// (quota / period), nullopt when there is no quota.
std::optional<double> ParseCpuMax(std::string_view text);

/// The cgroup v2 path of /proc/PID/cgroup (its "0::PATH" line), nullopt on a host
/// without the unified hierarchy.
std::optional<std::string> ParseUnifiedCgroup(std::string_view text);

/// The pids of utmp's USER_PROCESS records (an interactive login each) in `bytes`, the
/// file's contents as glibc writes them (struct utmp records).
std::vector<pid_t> ParseUtmpLogins(std::string_view bytes);

}  // namespace tpufleet::agent::sampler
