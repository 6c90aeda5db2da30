#include "agent/sampler/proc_parsers.h"

#include <utmp.h>

#include <cstring>

#include "util/strings.h"

namespace tpufleet::agent::sampler {
namespace {

// The words of a line, split on runs of spaces and tabs.
std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) {
      ++i;
    }
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') {
      ++i;
    }
    if (i > start) {
      words.push_back(line.substr(start, i - start));
    }
  }
  return words;
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    lines.push_back(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  }
  return lines;
}

bool ToU64(std::string_view word, uint64_t* out) {
  long long v = 0;
  if (!ParseInt(word, &v) || v < 0) {
    return false;
  }
  *out = static_cast<uint64_t>(v);
  return true;
}

}  // namespace

std::optional<CpuTimes> ParseProcStat(std::string_view text) {
  std::optional<CpuTimes> out;
  int cpus = 0;
  for (std::string_view line : Lines(text)) {
    std::vector<std::string_view> w = Words(line);
    if (w.empty() || !StartsWith(w[0], "cpu")) {
      continue;
    }
    if (w[0] != "cpu") {
      ++cpus;
      continue;
    }
    // cpu user nice system idle iowait irq softirq steal [guest guest_nice]
    uint64_t v[8] = {};
    bool ok = w.size() >= 9;
    for (size_t i = 0; ok && i < 8; ++i) {
      ok = ToU64(w[i + 1], &v[i]);
    }
    if (ok) {
      CpuTimes t;
      t.busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
      t.total = t.busy + v[3] + v[4];
      out = t;
    }
  }
  if (out) {
    out->cpus = cpus;
  }
  return out;
}

std::optional<MemInfo> ParseMeminfo(std::string_view text) {
  std::optional<int64_t> total;
  std::optional<int64_t> available;
  for (std::string_view line : Lines(text)) {
    std::vector<std::string_view> w = Words(line);
    long long kib = 0;
    if (w.size() < 2 || !ParseInt(w[1], &kib) || kib < 0) {
      continue;
    }
    if (w[0] == "MemTotal:") {
      total = kib * 1024;
    } else if (w[0] == "MemAvailable:") {
      available = kib * 1024;
    }
  }
  if (!total || !available) {
    return std::nullopt;
  }
  return MemInfo{*total, *available};
}

DeviceIo ParseDiskstats(std::string_view text, const std::set<std::string>& whole_disks) {
  // major minor name reads merged sectors_read ms writes merged sectors_written …
  DeviceIo t;
  for (std::string_view line : Lines(text)) {
    std::vector<std::string_view> w = Words(line);
    uint64_t read = 0;
    uint64_t written = 0;
    if (w.size() >= 10 && whole_disks.count(std::string(w[2])) != 0 && ToU64(w[5], &read) &&
        ToU64(w[9], &written)) {
      t[std::string(w[2])] = IoTotals{read * 512, written * 512};
    }
  }
  return t;
}

DeviceIo ParseNetDev(std::string_view text) {
  // "  eth0: rx_bytes packets errs drop fifo frame compressed multicast tx_bytes …"; the
  // name and the first number may touch ("eth0:123").
  DeviceIo t;
  for (std::string_view line : Lines(text)) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      continue;
    }
    std::string_view name = Trim(line.substr(0, colon));
    std::vector<std::string_view> w = Words(line.substr(colon + 1));
    uint64_t rx = 0;
    uint64_t tx = 0;
    if (name == "lo" || w.size() < 9 || !ToU64(w[0], &rx) || !ToU64(w[8], &tx)) {
      continue;
    }
    t[std::string(name)] = IoTotals{rx, tx};
  }
  return t;
}

std::optional<PidStat> ParsePidStat(std::string_view text) {
  size_t paren = text.rfind(')');
  if (paren == std::string_view::npos) {
    return std::nullopt;
  }
  // Field 3 (state) is w[0]: field N is w[N - 3].
  std::vector<std::string_view> w = Words(Trim(text.substr(paren + 1)));
  if (w.size() < 22) {
    return std::nullopt;
  }
  long long session = 0;
  long long rss = 0;
  uint64_t v[5] = {};  // utime stime cutime cstime starttime
  const size_t fields[5] = {14, 15, 16, 17, 22};
  for (size_t i = 0; i < 5; ++i) {
    // cutime and cstime are signed in the kernel's format; they are never negative.
    if (!ToU64(w[fields[i] - 3], &v[i])) {
      return std::nullopt;
    }
  }
  if (!ParseInt(w[6 - 3], &session) || !ParseInt(w[24 - 3], &rss)) {
    return std::nullopt;
  }
  PidStat s;
  s.session = static_cast<pid_t>(session);
  s.cpu_ticks = v[0] + v[1];
  s.child_ticks = v[2] + v[3];
  s.start_ticks = v[4];
  s.rss_pages = rss < 0 ? 0 : rss;
  return s;
}

std::optional<uint64_t> ParseSchedstatWanted(std::string_view text) {
  std::vector<std::string_view> w = Words(Trim(text));
  uint64_t run = 0;
  uint64_t wait = 0;
  if (w.size() != 3 || !ToU64(w[0], &run) || !ToU64(w[1], &wait)) {
    return std::nullopt;
  }
  return run + wait;
}

std::optional<double> ParseCpuMax(std::string_view text) {
  std::vector<std::string_view> w = Words(Trim(text));
  long long quota = 0;
  long long period = 0;
  if (w.size() != 2 || w[0] == "max" || !ParseInt(w[0], &quota) || !ParseInt(w[1], &period) ||
      quota <= 0 || period <= 0) {
    return std::nullopt;
  }
  return static_cast<double>(quota) / static_cast<double>(period);
}

std::optional<std::string> ParseUnifiedCgroup(std::string_view text) {
  for (std::string_view line : Lines(text)) {
    if (StartsWith(line, "0::")) {
      return std::string(line.substr(3));
    }
  }
  return std::nullopt;
}

std::vector<pid_t> ParseUtmpLogins(std::string_view bytes) {
  std::vector<pid_t> pids;
  for (size_t at = 0; at + sizeof(utmp) <= bytes.size(); at += sizeof(utmp)) {
    utmp u;
    std::memcpy(&u, bytes.data() + at, sizeof u);
    if (u.ut_type == USER_PROCESS && u.ut_pid > 0) {
      pids.push_back(u.ut_pid);
    }
  }
  return pids;
}

}  // namespace tpufleet::agent::sampler
