#include "agent/host/tpu_scan.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "agent/host/user_db.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/unique_fd.h"

namespace tpufleet::agent::host {
namespace {

// The first `max` bytes of `path` (a /proc file whose size stat does not tell).
std::string ReadPrefix(const std::string& path, size_t max) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  std::string out;
  if (fd.get() < 0) {
    return out;
  }
  out.resize(max);
  size_t done = 0;
  while (done < max) {
    ssize_t n = ::read(fd.get(), out.data() + done, max - done);
    if (n <= 0) {
      break;
    }
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  return out;
}

bool ParsePid(std::string_view text, pid_t* pid) {
  long long v = 0;
  if (!ParseInt(text, &v) || v <= 0 || v > INT_MAX) {
    return false;
  }
  *pid = static_cast<pid_t>(v);
  return true;
}

ProcessInfo Describe(const HostPaths& paths, const std::vector<PasswdEntry>& passwd, pid_t pid) {
  ProcessInfo p;
  p.pid = pid;
  const std::string dir = paths.proc + "/" + std::to_string(pid);
  std::string status = ReadPrefix(dir + "/status", 8192);
  if (status.empty()) {
    return p;
  }
  for (const std::string& line : Split(status, '\n')) {
    if (StartsWith(line, "Uid:")) {
      std::vector<std::string> ids = Split(Trim(std::string_view(line).substr(4)), '\t');
      long long uid = 0;
      if (!ids.empty() && ParseInt(Trim(ids[0]), &uid) && uid >= 0) {
        p.uid = static_cast<uid_t>(uid);
      }
    }
  }
  p.user = UserName(passwd, p.uid);
  std::string cmdline = ReadPrefix(dir + "/cmdline", kMaxCommandBytes);
  while (!cmdline.empty() && cmdline.back() == '\0') {
    cmdline.pop_back();
  }
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  if (cmdline.empty()) {
    cmdline = "[" + std::string(Trim(ReadPrefix(dir + "/comm", 64))) + "]";
  }
  p.command = std::move(cmdline);
  // stat: "pid (comm) state ppid …"; comm may hold spaces and ')', so count from the last.
  std::string stat = ReadPrefix(dir + "/stat", 4096);
  size_t close = stat.rfind(')');
  if (close != std::string::npos && close + 2 < stat.size()) {
    std::vector<std::string> f = Split(std::string_view(stat).substr(close + 2), ' ');
    long long ticks = 0;
    if (f.size() > 19 && ParseInt(f[19], &ticks) && ticks >= 0) {  // field 22 of stat(5)
      p.start_ticks = static_cast<uint64_t>(ticks);
    }
  }
  return p;
}

std::vector<pid_t> Pids(const HostPaths& paths) {
  std::vector<pid_t> pids;
  for (const std::string& name : ListDirectory(paths.proc)) {
    pid_t pid = 0;
    if (ParsePid(name, &pid)) {
      pids.push_back(pid);
    }
  }
  std::sort(pids.begin(), pids.end());
  return pids;
}

}  // namespace

std::vector<FileLock> ParseProcLocks(std::string_view text) {
  // "1: POSIX  ADVISORY  WRITE 1234 fd:01:5678 0 EOF"; a waiter: "1: -> POSIX …".
  std::vector<FileLock> out;
  for (const std::string& line : Split(text, '\n')) {
    std::vector<std::string> words;
    for (std::string& w : Split(line, ' ')) {
      if (!w.empty()) {
        words.push_back(std::move(w));
      }
    }
    if (words.size() < 6 || words[1] == "->") {
      continue;
    }
    std::vector<std::string> id = Split(words[5], ':');  // major:minor:inode
    long long pid = -1;  // "-1": an OFD lock, owned by no single process
    long long inode = 0;
    if (id.size() == 3 && ParseInt(id[2], &inode) && inode > 0 &&
        (words[4] == "-1" || ParseInt(words[4], &pid))) {
      out.push_back({static_cast<pid_t>(pid), static_cast<ino_t>(inode)});
    }
  }
  return out;
}

ProcessInfo ReadProcess(const HostPaths& paths, pid_t pid) {
  return Describe(paths, ReadPasswd(paths.etc), pid);
}

TpuFacts ScanTpu(const HostPaths& paths) {
  TpuFacts facts;
  facts.accelerators = ScanAccelerators(paths);
  const std::vector<PasswdEntry> passwd = ReadPasswd(paths.etc);

  std::set<std::string> nodes;
  for (const Accelerator& a : facts.accelerators) {
    if (!a.path.empty()) {
      nodes.insert(a.path);
    }
  }
  if (!nodes.empty()) {
    for (pid_t pid : Pids(paths)) {
      const std::string fd_dir = paths.proc + "/" + std::to_string(pid) + "/fd";
      std::set<std::string> held;
      for (const std::string& fd : ListDirectory(fd_dir)) {
        char buf[PATH_MAX];
        ssize_t n = ::readlink((fd_dir + "/" + fd).c_str(), buf, sizeof buf - 1);
        if (n > 0 && nodes.count(std::string(buf, static_cast<size_t>(n))) != 0) {
          held.insert(std::string(buf, static_cast<size_t>(n)));
        }
      }
      if (!held.empty()) {
        ProcessInfo p = Describe(paths, passwd, pid);
        for (const std::string& device : held) {
          facts.holders.push_back({device, p});
        }
      }
    }
    std::stable_sort(facts.holders.begin(), facts.holders.end(),
                     [](const DeviceHolder& a, const DeviceHolder& b) { return a.device < b.device; });
  }

  struct stat st;
  if (::lstat(paths.lockfile.c_str(), &st) == 0) {
    facts.lockfile.present = true;
    facts.lockfile.inode = st.st_ino;
    Result<std::string> locks = ReadFile(paths.proc + "/locks", 16u << 20);
    std::set<pid_t> seen;
    for (const FileLock& l : locks.ok() ? ParseProcLocks(*locks) : std::vector<FileLock>()) {
      if (l.inode == st.st_ino && seen.insert(l.pid).second) {
        facts.lockfile.lockers.push_back(l.pid > 0 ? Describe(paths, passwd, l.pid)
                                                   : ProcessInfo{l.pid, 0, "", "", 0});
      }
    }
  }
  return facts;
}

}  // namespace tpufleet::agent::host
