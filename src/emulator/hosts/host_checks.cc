#include "emulator/hosts/host_checks.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "emulator/hosts/accelerators.h"
#include "emulator/hosts/system_programs.h"
#include "emulator/hosts/worker_setup.h"
#include "util/file.h"
#include "util/log.h"
#include "util/strings.h"
#include "util/unique_fd.h"

namespace tpufleet::emulator::hosts {
namespace {

namespace fs = std::filesystem;

constexpr const char* kNeedRoot =
    "the emulator's worker hosts need root (or CAP_SYS_ADMIN + CAP_NET_ADMIN) to create network "
    "namespaces; run as root";

bool IsUnder(const std::string& path, const std::string& dir) {
  return path == dir || StartsWith(path, dir + "/");
}

bool HasCapabilities() {
  Result<std::string> status = ReadFile("/proc/self/status");
  if (!status.ok()) {
    return false;
  }
  for (const std::string& line : Split(*status, '\n')) {
    if (StartsWith(line, "CapEff:")) {
      unsigned long long caps = std::strtoull(line.c_str() + 7, nullptr, 16);
      constexpr int kCapNetAdmin = 12;
      constexpr int kCapSysAdmin = 21;
      return (caps >> kCapNetAdmin & 1) != 0 && (caps >> kCapSysAdmin & 1) != 0;
    }
  }
  return false;
}

// Pids of worker inits under `state_dir`: PID 1 of their namespace, running the worker
// program with --disk=<state_dir>/nodes/…
std::vector<pid_t> FindStaleInits(const std::string& state_dir) {
  std::vector<pid_t> out;
  for (const std::string& name : ListDirectory("/proc")) {
    long long pid = 0;
    if (!ParseInt(name, &pid) || pid <= 1) {
      continue;
    }
    Result<std::string> cmdline = ReadFile("/proc/" + name + "/cmdline");
    if (!cmdline.ok() || cmdline->empty()) {
      continue;
    }
    std::vector<std::string> argv = Split(*cmdline, '\0');
    if (fs::path(argv[0]).filename() != kWorkerProgram) {
      continue;
    }
    bool ours = false;
    for (const std::string& a : argv) {
      ours = ours || StartsWith(a, "--disk=" + state_dir + "/nodes/");
    }
    Result<std::string> status = ReadFile("/proc/" + name + "/status");
    bool is_init = false;
    if (status.ok()) {
      for (const std::string& line : Split(*status, '\n')) {
        if (StartsWith(line, "NSpid:")) {
          std::vector<std::string> f;
          for (const std::string& part : Split(line.substr(6), '\t')) {
            if (!Trim(part).empty()) {
              f.emplace_back(Trim(part));
            }
          }
          is_init = f.size() >= 2 && f.back() == "1";
        }
      }
    }
    if (ours && is_init) {
      out.push_back(static_cast<pid_t>(pid));
    }
  }
  return out;
}

bool GoneOrZombie(pid_t pid) {
  Result<std::string> stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) {
    return true;
  }
  size_t paren = stat->rfind(')');
  return paren != std::string::npos && paren + 2 < stat->size() && (*stat)[paren + 2] == 'Z';
}

bool IsSimpleName(const std::string& s, size_t max) {
  if (s.empty() || s.size() > max) {
    return false;
  }
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) {
      return false;
    }
  }
  return true;
}

}  // namespace

Status ValidateNodeSpec(const NodeHostSpec& spec) {
  if (spec.name.empty() || spec.name.size() > 1024 || spec.name.find('\n') != std::string::npos) {
    return InvalidArgumentError("worker hosts: bad node name");
  }
  if (!IsSimpleName(spec.id, 64)) {
    return InvalidArgumentError("worker hosts: node id must be 1-64 of [a-z0-9-], got \"" +
                                spec.id.substr(0, 64) + "\"");
  }
  if (!IsSimpleName(spec.accelerator_type, 64)) {
    return InvalidArgumentError("worker hosts: bad accelerator type");
  }
  if (!spec.family.empty() && !IsSimpleName(spec.family, 64)) {
    return InvalidArgumentError("worker hosts: bad accelerator family");
  }
  if (spec.chips_per_worker < 0 ||
      spec.chips_per_worker > kMaxChipsPerWorker) {
    return InvalidArgumentError("worker hosts: a worker has 0 to " +
                                std::to_string(kMaxChipsPerWorker) + " chips, not " +
                                std::to_string(spec.chips_per_worker));
  }
  if (spec.workers < 1 || spec.workers > kMaxWorkersPerNode) {
    return InvalidArgumentError("worker hosts: a node has 1 to " +
                                std::to_string(kMaxWorkersPerNode) + " workers, not " +
                                std::to_string(spec.workers));
  }
  return Status::Ok();
}

// The directories a worker mounts over or that hold the machine's own state.
Status ValidateStateDir(const std::string& dir) {
  if (dir.empty() || dir[0] != '/') {
    return InvalidArgumentError("worker hosts: the state dir must be an absolute path, not \"" +
                                dir + "\"");
  }
  for (const char* forbidden : {"/etc", "/usr", "/opt", "/run", "/proc", "/sys", "/dev", "/boot"}) {
    if (IsUnder(dir, forbidden)) {
      return InvalidArgumentError("worker hosts: the state dir " + dir + " must not be under " +
                                  forbidden);
    }
  }
  for (const char* covered : {"/home", "/root", "/tmp", "/var", "/etc", "/usr", "/opt", "/run"}) {
    if (IsUnder(covered, dir)) {
      return InvalidArgumentError("worker hosts: the state dir " + dir + " must not contain " +
                                  covered + ", which every worker mounts over");
    }
  }
  return Status::Ok();
}

Status CheckStateDirOwner(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    return errno == ENOENT ? Status::Ok() : FailedPreconditionError(Errno(dir));
  }
  if (!S_ISDIR(st.st_mode)) {
    return FailedPreconditionError("worker hosts: the state dir " + dir + " is not a directory");
  }
  return CheckOwnedByMe("worker hosts: the state dir " + dir, st, S_IWGRP | S_IWOTH);
}

Status MakeBucketDir(const std::string& dir) {
  TPUFLEET_TRY(ValidateStateDir(dir));
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return FailedPreconditionError(Errno("worker hosts: the bucket dir " + dir));
  }
  // Opened without following a link, so the mode lands on this directory and no other.
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) {
    return FailedPreconditionError("worker hosts: the bucket dir " + dir + " is not a directory (" +
                                   std::strerror(errno) + ")");
  }
  TPUFLEET_TRY(CheckOwnedByMe("worker hosts: the bucket dir " + dir, st, 0));
  if (::fchmod(fd.get(), 01777) != 0) {
    return FailedPreconditionError(Errno("chmod " + dir));
  }
  if (::mkdir(kBucketMount, 0755) != 0 && errno != EEXIST) {
    return FailedPreconditionError(Errno(std::string("worker hosts: making ") + kBucketMount +
                                         " on this machine, where every worker mounts the bucket"));
  }
  struct stat mp {};
  // (Only root may replace an entry of /, so what is checked here is what workers find.)
  if (::lstat(kBucketMount, &mp) != 0 || !S_ISDIR(mp.st_mode)) {
    return FailedPreconditionError(std::string("worker hosts: ") + kBucketMount +
                                   " on this machine is not a directory (a link?): every "
                                   "worker mounts the bucket there");
  }
  return Status::Ok();
}

Status CheckMachineSupport() {
  if (::geteuid() != 0 && !HasCapabilities()) {
    return FailedPreconditionError(kNeedRoot);
  }
  TPUFLEET_TRY(hosts::FindProgram("ip", "iproute2").status());
  TPUFLEET_TRY(hosts::FindProgram("sshd", "openssh-server").status());
  TPUFLEET_TRY(hosts::FindProgram("ssh-keygen", "openssh-client").status());
  TPUFLEET_TRY(hosts::FindProgram("useradd", "passwd").status());
  // Try the namespaces once: containers often forbid them even to root.
  long pid = ::syscall(
      SYS_clone, CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | SIGCHLD,
      nullptr, nullptr, nullptr, nullptr);
  if (pid == 0) {
    ::_exit(0);
  }
  if (pid < 0) {
    return FailedPreconditionError(std::string(kNeedRoot) +
                                   " (creating namespaces failed: " + std::strerror(errno) + ")");
  }
  int status = 0;
  while (::waitpid(static_cast<pid_t>(pid), &status, 0) < 0 && errno == EINTR) {
  }
  return Status::Ok();
}

Status WaitForSshdsListening(const std::vector<std::string>& addresses, Clock& clock,
                             Clock::MonoTime deadline) {
  std::vector<std::string> pending = addresses;
  while (!pending.empty()) {
    std::vector<UniqueFd> socks;
    std::vector<pollfd> fds;
    for (const std::string& a : pending) {
      UniqueFd s(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      sockaddr_in sin{};
      sin.sin_family = AF_INET;
      sin.sin_port = htons(22);
      ::inet_pton(AF_INET, a.c_str(), &sin.sin_addr);
      ::connect(s.get(), reinterpret_cast<sockaddr*>(&sin), sizeof sin);
      fds.push_back({s.get(), POLLOUT, 0});
      socks.push_back(std::move(s));
    }
    auto attempt_end = clock.MonotonicNow() + kProbeAttempt;
    std::vector<bool> ok(pending.size(), false);
    size_t answered = 0;
    while (answered < pending.size() && clock.MonotonicNow() < attempt_end) {
      if (::poll(fds.data(), fds.size(), static_cast<int>(kProbeAttempt.count())) <= 0) {
        break;
      }
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].fd >= 0 && fds[i].revents != 0) {
          int err = 0;
          socklen_t len = sizeof err;
          ::getsockopt(fds[i].fd, SOL_SOCKET, SO_ERROR, &err, &len);
          ok[i] = err == 0;
          fds[i].fd = -1;
          ++answered;
        }
      }
    }
    std::vector<std::string> still;
    for (size_t i = 0; i < pending.size(); ++i) {
      if (!ok[i]) {
        still.push_back(pending[i]);
      }
    }
    pending = std::move(still);
    if (!pending.empty()) {
      if (clock.MonotonicNow() >= deadline) {
        return TimeoutError("sshd on " + Join(pending, ", ") +
                            " did not accept connections from the machine in time");
      }
      clock.SleepFor(kHostPollInterval);
    }
  }
  return Status::Ok();
}

void KillStaleInits(const std::string& state_dir) {
  std::vector<pid_t> pids = FindStaleInits(state_dir);
  for (pid_t pid : pids) {
    Log(LogLevel::kInfo,
        "emulator hosts: killing a leftover worker (pid " + std::to_string(pid) + ")");
    ::kill(pid, SIGKILL);
  }
  auto deadline = std::chrono::steady_clock::now() + kStaleKillTimeout;
  for (pid_t pid : pids) {
    while (!GoneOrZombie(pid) && !Reaped(pid) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(kHostPollInterval);
    }
  }
}

Result<int> LockStateDir(const std::string& state_dir) {
  std::string path = state_dir + "/hosts.lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    return FailedPreconditionError(Errno(path));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return FailedPreconditionError("the worker hosts' state dir " + state_dir +
                                   " is in use by another running emulator");
  }
  return fd;
}

}  // namespace tpufleet::emulator::hosts
