#include "agent/host/user_processes.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "util/file.h"
#include "util/strings.h"

namespace tpufleet::agent::host {
namespace {

// How often the processes are counted while they end: a few scans of /proc a second.
constexpr std::chrono::milliseconds kRecount{50};
// A /proc/PID/status is about 1.5 KiB.
constexpr size_t kStatusBytes = 8192;

// Whether /proc/PID/status says a live process whose real or effective uid is `uid`.
bool Owned(const std::string& status_text, uid_t uid) {
  bool live = true;
  bool owned = false;
  for (const std::string& line : Split(status_text, '\n')) {
    if (line.rfind("State:", 0) == 0) {
      live = line.find('Z') == std::string::npos && line.find('X') == std::string::npos;
    } else if (line.rfind("Uid:", 0) == 0) {
      std::vector<std::string> f = Split(line, '\t');  // "Uid:", real, effective, saved, fs
      long long real = -1;
      long long effective = -1;
      owned = f.size() >= 3 && ParseInt(f[1], &real) && ParseInt(f[2], &effective) &&
              (real == static_cast<long long>(uid) || effective == static_cast<long long>(uid));
    }
  }
  return live && owned;
}

// kill(-1, sig) as `uid`, from a child (above).
Status SignalAllAs(uid_t uid, int sig) {
  pid_t child = ::fork();
  if (child < 0) {
    return ErrnoStatus("fork", errno);
  }
  if (child == 0) {
    // Only async-signal-safe calls between fork and _exit.
    // Never on as root: kill(-1) as root is every process of the host.
    if (::setresuid(uid, uid, uid) != 0 || ::getuid() != uid || ::geteuid() != uid) {
      ::_exit(2);
    }
    ::_exit(::kill(-1, sig) == 0 || errno == ESRCH ? 0 : 1);
  }
  int wstatus = 0;
  while (::waitpid(child, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) == 2) {
    return InternalError("cannot become uid " + std::to_string(uid) + " to signal its processes");
  }
  return Status::Ok();
}

// Waits up to `limit` for no process of `uid` to be left; how many are left.
int WaitGone(const HostPaths& paths, uid_t uid, std::chrono::milliseconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  int left = CountProcessesOf(paths, uid);
  while (left > 0 && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(kRecount);
    left = CountProcessesOf(paths, uid);
  }
  return left;
}

}  // namespace

int CountProcessesOf(const HostPaths& paths, uid_t uid) {
  DIR* d = ::opendir(paths.proc.c_str());
  if (d == nullptr) {
    return 0;
  }
  int n = 0;
  while (dirent* e = ::readdir(d)) {
    long long pid = 0;
    if (!ParseInt(e->d_name, &pid) || pid <= 0) {
      continue;
    }
    Result<std::string> status = ReadFile(paths.proc + "/" + e->d_name + "/status", kStatusBytes);
    if (status.ok() && Owned(*status, uid)) {
      ++n;
    }
  }
  ::closedir(d);
  return n;
}

Result<int> StopProcessesOf(const HostPaths& paths, uid_t uid, std::chrono::milliseconds grace) {
  if (uid == 0 || uid == static_cast<uid_t>(-1) || uid == ::getuid()) {
    return InvalidArgumentError("refusing to stop the processes of uid " + std::to_string(uid) +
                                " (root's, or the agent's own)");
  }
  int found = CountProcessesOf(paths, uid);
  if (found == 0) {
    return 0;
  }
  TPUFLEET_TRY(SignalAllAs(uid, SIGTERM));
  if (WaitGone(paths, uid, grace) == 0) {
    return found;
  }
  TPUFLEET_TRY(SignalAllAs(uid, SIGKILL));
  if (int left = WaitGone(paths, uid, kKillWait); left > 0) {
    return InternalError(std::to_string(left) + " processes of uid " + std::to_string(uid) +
                         " are still there after SIGKILL");
  }
  return found;
}

}  // namespace tpufleet::agent::host
