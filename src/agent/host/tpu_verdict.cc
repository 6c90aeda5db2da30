#include "agent/host/tpu_verdict.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "util/file.h"
#include "util/strings.h"
#include "util/unique_fd.h"

namespace tpufleet::agent::host {
namespace {

// "pid 4242 (alice): python3 train.py"
std::string Who(const ProcessInfo& p) {
  if (p.pid <= 0) {
    return std::string("a process this agent cannot see (another PID namespace, or an open "
                       "file description lock; `sudo lsof ") + kLibtpuLockfile + "` names it)";
  }
  return "pid " + std::to_string(p.pid) + " (" + (p.user.empty() ? "?" : p.user) + "): " +
         p.command;
}

std::string WhoAll(const std::vector<TpuClaimant>& claimants) {
  std::vector<std::string> parts;
  for (const TpuClaimant& c : claimants) {
    parts.push_back(Who(c.process));
  }
  return Join(parts, "; ");
}

void Add(std::vector<TpuClaimant>* claimants, const ProcessInfo& p, const std::string& what,
         const LiveJobPids& live) {
  for (TpuClaimant& c : *claimants) {
    if (c.process.pid == p.pid) {
      c.holds.push_back(what);
      return;
    }
  }
  auto job = live.find(p.pid);
  claimants->push_back({p, {what}, job == live.end() || p.pid <= 0 ? "" : job->second});
}

enum class Removal { kRemoved, kGone, kLocked };

// Removes the lockfile when it is still the scanned inode and nobody holds its lock
// (see the header); the lock is taken before the unlink and dropped after it.
Result<Removal> RemoveIfUnlocked(const std::string& path, ino_t inode) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) {
    if (errno == ENOENT) {
      return Removal::kGone;
    }
    return InternalError(ErrnoStatus(path, errno).message() +
                         "; the stale libtpu lockfile cannot be checked, remove it by hand");
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return InternalError(path + " is not a regular file; remove it by hand");
  }
  if (st.st_ino != inode) {
    return Removal::kLocked;  // replaced since the scan: decide again
  }
  if (::lockf(fd.get(), F_TLOCK, 0) != 0) {
    return Removal::kLocked;
  }
  struct stat now;
  if (::lstat(path.c_str(), &now) != 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev) {
    return Removal::kGone;
  }
  if (::unlink(path.c_str()) != 0) {
    return InternalError(ErrnoStatus(path, errno).message() + " (removing a stale libtpu lockfile)");
  }
  return Removal::kRemoved;
}

bool WaitForExit(int pidfd, std::chrono::milliseconds wait) {
  struct pollfd p = {pidfd, POLLIN, 0};
  auto deadline = std::chrono::steady_clock::now() + wait;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    int n = ::poll(&p, 1, static_cast<int>(std::max<long long>(0, left.count())));
    if (n > 0) {
      return true;
    }
    if (n == 0 || errno != EINTR) {
      return false;
    }
  }
}

// Kills one orphan (see the header); the line for the job's log.
std::string Kill(const HostPaths& paths, const ProcessInfo& p, const ClaimOptions& options) {
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, p.pid, 0)));
  if (pidfd.get() < 0) {
    return "tpufleet: " + Who(p) + " had ended before it could be killed";
  }
  // The pidfd names whatever has the pid now: only the process scanned is signalled.
  if (ReadProcess(paths, p.pid).start_ticks != p.start_ticks) {
    return "tpufleet: " + Who(p) + " had ended before it could be killed (its pid is reused)";
  }
  auto send = [&](int sig) {
    return ::syscall(SYS_pidfd_send_signal, pidfd.get(), sig, nullptr, 0) == 0;
  };
  if (!send(SIGTERM)) {
    return "tpufleet: could not signal " + Who(p) + ": " + std::strerror(errno);
  }
  if (WaitForExit(pidfd.get(), options.term_grace)) {
    return "tpufleet: killed " + Who(p) + ", which held the TPU for no job (SIGTERM)";
  }
  send(SIGKILL);
  if (WaitForExit(pidfd.get(), options.kill_wait)) {
    return "tpufleet: killed " + Who(p) + ", which held the TPU for no job (SIGKILL " +
           std::to_string(options.term_grace.count() / 1000) + "s after SIGTERM)";
  }
  return "tpufleet: " + Who(p) + " is still there " +
         std::to_string(options.kill_wait.count() / 1000) + "s after SIGKILL";
}

}  // namespace

std::string StaleLockfileLine() {
  return std::string("tpufleet: removed a stale ") + kLibtpuLockfile +
         " (no process held a lock on it or a TPU device)";
}

TpuVerdict DecideTpu(const TpuFacts& facts, const LiveJobPids& live) {
  std::vector<TpuClaimant> claimants;
  for (const ProcessInfo& p : facts.lockfile.lockers) {
    Add(&claimants, p, kLibtpuLockfile, live);
  }
  for (const DeviceHolder& h : facts.holders) {
    Add(&claimants, h.process, h.device, live);
  }
  TpuVerdict v;
  if (claimants.empty()) {
    v.kind = facts.lockfile.present ? TpuVerdictKind::kStaleLockfile : TpuVerdictKind::kFree;
    return v;
  }
  auto held = std::find_if(claimants.begin(), claimants.end(),
                           [](const TpuClaimant& c) { return !c.job.empty(); });
  if (held != claimants.end()) {
    v.kind = TpuVerdictKind::kHeldByJob;
    v.job = held->job;
    for (TpuClaimant& c : claimants) {
      if (c.job == v.job) {
        v.claimants.push_back(std::move(c));
      }
    }
    v.message = "the TPU is in use by job " + v.job + ": " + WhoAll(v.claimants);
    return v;
  }
  v.kind = TpuVerdictKind::kOrphan;
  v.claimants = std::move(claimants);
  v.message = "the TPU is held by " + WhoAll(v.claimants) +
              ", a process of no tpufleet job; stop it, or start the job with --kill-stale "
              "to have the agent kill it";
  return v;
}

Result<TpuVerdict> ClaimTpu(const HostPaths& paths, const LiveJobPids& live,
                            const ClaimOptions& options) {
  std::vector<std::string> log;
  bool killed = false;
  // A scan that races a process starting or ending is decided again, a few times.
  constexpr int kMaxRounds = 3;
  for (int round = 0;; ++round) {
    TpuFacts facts = ScanTpu(paths);
    TpuVerdict v = DecideTpu(facts, live);
    if (v.kind == TpuVerdictKind::kOrphan && options.kill_stale && !killed) {
      for (const TpuClaimant& c : v.claimants) {
        if (c.process.pid > 0) {
          log.push_back(Kill(paths, c.process, options));
        }
      }
      killed = true;
      continue;
    }
    if (v.kind == TpuVerdictKind::kStaleLockfile) {
      TPUFLEET_ASSIGN_OR_RETURN(Removal r, RemoveIfUnlocked(paths.lockfile, facts.lockfile.inode));
      if (r == Removal::kRemoved) {
        log.push_back(StaleLockfileLine());
      } else if (r == Removal::kGone) {
        v.kind = TpuVerdictKind::kFree;
      } else if (round + 1 < kMaxRounds) {
        continue;
      } else {
        // Locked, yet /proc/locks showed no one: a holder this agent cannot see.
        v.kind = TpuVerdictKind::kOrphan;
        v.claimants = {{ProcessInfo{}, {kLibtpuLockfile}, ""}};
        v.message = "the TPU is held by " + WhoAll(v.claimants) +
                    ", a process of no tpufleet job; the lockfile is locked and stays";
      }
    }
    v.log_lines = std::move(log);
    return v;
  }
}

}  // namespace tpufleet::agent::host
