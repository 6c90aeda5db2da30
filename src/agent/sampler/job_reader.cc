#include "agent/sampler/job_reader.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include "agent/sampler/proc_parsers.h"
#include "util/file.h"
#include "util/strings.h"

namespace tpufleet::agent::sampler {
namespace {

// A stat line is a few hundred bytes.
constexpr size_t kMaxStatBytes = 4096;

std::optional<PidStat> StatOf(const std::string& path) {
  Result<std::string> text = ReadFile(path, kMaxStatBytes);
  return text.ok() ? ParsePidStat(*text) : std::nullopt;
}

// The CPUs `pid` may use: its affinity, bounded by its cgroup's quota and its parents'.
double CpuLimit(const host::HostPaths& paths, pid_t pid) {
  double cpus = 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(pid, sizeof set, &set) == 0) {
    cpus = CPU_COUNT(&set);
  } else {
    cpus = static_cast<double>(sysconf(_SC_NPROCESSORS_ONLN));
  }
  Result<std::string> cgroup = ReadFile(paths.proc + "/" + std::to_string(pid) + "/cgroup", 65536);
  std::optional<std::string> path = cgroup.ok() ? ParseUnifiedCgroup(*cgroup) : std::nullopt;
  const std::string root = paths.sys + "/fs/cgroup";
  for (std::string dir = path.value_or(""); !dir.empty() && dir != "/";
       dir = dir.substr(0, dir.rfind('/'))) {
    Result<std::string> max = ReadFile(root + dir + "/cpu.max", 256);
    if (std::optional<double> quota = max.ok() ? ParseCpuMax(*max) : std::nullopt) {
      cpus = std::min(cpus, *quota);
    }
  }
  return 100.0 * cpus;
}

}  // namespace

std::map<std::string, JobCounters> ReadJobCounters(const host::HostPaths& paths,
                                                   const std::vector<JobRef>& jobs) {
  std::map<pid_t, const JobRef*> sessions;  // a keeper's (and a terminal job's) session
  std::map<pid_t, const JobRef*> keepers;
  for (const JobRef& job : jobs) {
    if (job.keeper > 0) {
      sessions[job.keeper] = &job;
      keepers[job.keeper] = &job;
    }
    if (job.pid > 0) {
      sessions[job.pid] = &job;
    }
  }
  std::map<std::string, JobCounters> out;
  if (sessions.empty()) {
    return out;
  }
  const int64_t page = sysconf(_SC_PAGESIZE);
  for (const std::string& name : ListDirectory(paths.proc)) {
    long long number = 0;
    if (!ParseInt(name, &number)) {
      continue;
    }
    const pid_t pid = static_cast<pid_t>(number);
    std::optional<PidStat> stat = StatOf(paths.proc + "/" + name + "/stat");
    if (!stat) {
      continue;
    }
    if (auto keeper = keepers.find(pid); keeper != keepers.end()) {
      out[keeper->second->id].cpu_ticks += stat->child_ticks;  // the command, once reaped
      continue;
    }
    auto job = sessions.find(stat->session);
    if (job == sessions.end()) {
      continue;
    }
    JobCounters& c = out[job->second->id];
    c.cpu_ticks += stat->cpu_ticks + stat->child_ticks;
    c.rss_bytes += stat->rss_pages * page;
    c.pids.push_back(pid);
    const std::string tasks = paths.proc + "/" + name + "/task";
    for (const std::string& tid : ListDirectory(tasks)) {
      long long t = 0;
      std::optional<PidStat> ts = ParseInt(tid, &t) ? StatOf(tasks + "/" + tid + "/stat")
                                                    : std::nullopt;
      if (ts) {
        c.threads[static_cast<pid_t>(t)] = {ts->start_ticks, ts->cpu_ticks};
      }
    }
  }
  for (const JobRef& job : jobs) {
    auto c = out.find(job.id);
    if (c == out.end()) {
      continue;
    }
    if (c->second.pids.empty()) {
      out.erase(c);  // its keeper alone: the command has not started or has ended
      continue;
    }
    c->second.cpu_limit_percent =
        CpuLimit(paths, job.pid > 0 ? job.pid : c->second.pids.front());
  }
  return out;
}

JobSample JobSampleOf(const JobRef& job, const JobCounters* before, const JobCounters& now,
                      double seconds, double ticks_per_second) {
  JobSample s;
  s.id = job.id;
  s.user = job.user;
  s.memory_bytes = now.rss_bytes;
  s.cpu_limit_percent = now.cpu_limit_percent;
  if (before == nullptr || seconds <= 0 || ticks_per_second <= 0) {
    return s;
  }
  auto percent = [&](uint64_t ticks) { return 100.0 * static_cast<double>(ticks) / ticks_per_second / seconds; };
  // A process that left the session without being waited for takes its time along: the
  // total may drop, which is no negative use.
  s.cpu_percent = now.cpu_ticks > before->cpu_ticks ? percent(now.cpu_ticks - before->cpu_ticks) : 0;
  for (const auto& [tid, t] : now.threads) {
    auto was = before->threads.find(tid);
    if (was != before->threads.end() && was->second.start_ticks == t.start_ticks &&
        t.ticks >= was->second.ticks) {
      // A thread runs on one CPU at a time: more is the ticks' rounding.
      s.busiest_thread_percent = std::max(
          s.busiest_thread_percent, std::min(100.0, percent(t.ticks - was->second.ticks)));
    }
  }
  return s;
}

}  // namespace tpufleet::agent::sampler
