// What each running job uses of the host: its CPU (all its processes, and the busiest
// thread), its resident memory and the CPUs it may use, read from /proc.
//
// A job's processes are those whose session is its keeper's (a keeper leads its job's
// session: keeper.h), or its command's own when the job runs on a terminal (a session
// of its own); the keeper itself is not the job's, but the children it reaped are. The
// job's CPU time is the sum of its processes' utime+stime and of the children they
// waited for (cutime+cstime), so the CPU of a process that ran and ended between two
// readings is counted (make -j8's compilers), not lost. Memory is the sum of the
// processes' RSS (pages shared between them counted in each, as ps does). The CPU
// limit is the CPUs its command may run on (sched_getaffinity) or the quota of its
// cgroup v2 (cpu.max of its cgroup and every parent), whichever is smaller.
//
// Thread-safety: stateless.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "agent/host/host_paths.h"
#include "core/worker_sample.h"

namespace tpufleet::agent::sampler {

/// A running job as serve's job table knows it: what the sampler needs of it.
struct JobRef {
  std::string id;
  std::string user;
  pid_t keeper = 0;  // leads the job's session
  pid_t pid = 0;     // the command's process; 0 before it started
  std::vector<int> metrics_ports;  // tpu_metrics::MetricsPorts of its environment
};

/// A thread's CPU time, and its start to tell a reused tid.
struct ThreadTicks {
  uint64_t start_ticks = 0;
  uint64_t ticks = 0;
};

/// One reading of one job (see above).
struct JobCounters {
  uint64_t cpu_ticks = 0;
  std::map<pid_t, ThreadTicks> threads;  // by tid
  int64_t rss_bytes = 0;
  double cpu_limit_percent = 0;
  std::vector<pid_t> pids;  // its processes
};

/// Reads every job of `jobs` (by id): one pass over proc/*/stat, then the threads of
/// the jobs' processes. A job with no process left is absent.
std::map<std::string, JobCounters> ReadJobCounters(const host::HostPaths& paths,
                                                   const std::vector<JobRef>& jobs);

/// The job's sample: CPU and the busiest thread from the deltas since `before`, taken
/// `seconds` earlier (0 without `before`), in percent of one CPU; `ticks_per_second`
/// is USER_HZ.
JobSample JobSampleOf(const JobRef& job, const JobCounters* before, const JobCounters& now,
                      double seconds, double ticks_per_second);

}  // namespace tpufleet::agent::sampler
