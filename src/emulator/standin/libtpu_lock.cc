#include "emulator/standin/libtpu_lock.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

#include "util/strings.h"

namespace tpufleet::emulator::standin {
namespace {

// libtpu's reading of a boolean variable.
bool IsTrue(const std::string& v) {
  return v == "1" || v == "true" || v == "True" || v == "TRUE";
}

// The pid of /proc's entry `name`, or -1 for anything but a process.
pid_t PidOf(const char* name) {
  long long pid = 0;
  return ParseInt(name, &pid) && pid > 0 && pid <= INT_MAX ? static_cast<pid_t>(pid) : -1;
}

bool HasFdLinkedTo(pid_t pid, const std::string& device) {
  std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return false;
  }
  bool found = false;
  while (dirent* e = ::readdir(d)) {
    char target[PATH_MAX];
    ssize_t n = ::readlinkat(::dirfd(d), e->d_name, target, sizeof target - 1);
    if (n > 0 && std::string(target, static_cast<size_t>(n)) == device) {
      found = true;
      break;
    }
  }
  ::closedir(d);
  return found;
}

}  // namespace

LockDecision DecideLibtpuLock(const EnvLookup& env) {
  if (std::optional<std::string> load = env("TPU_LOAD_LIBRARY")) {
    if (*load == "0") {
      return {LockPolicy::kRefuseToLoad, "TPU_LOAD_LIBRARY=0"};
    }
    if (*load == "1") {
      return {LockPolicy::kSkip, "TPU_LOAD_LIBRARY=1"};
    }
  }
  if (std::optional<std::string> multi = env("ALLOW_MULTIPLE_LIBTPU_LOAD");
      multi && IsTrue(*multi)) {
    return {LockPolicy::kSkip, "ALLOW_MULTIPLE_LIBTPU_LOAD=" + *multi};
  }
  for (const char* name : {"TPU_CHIPS_PER_PROCESS_BOUNDS", "TPU_CHIPS_PER_HOST_BOUNDS"}) {
    std::optional<std::string> bounds = env(name);
    if (!bounds || bounds->empty()) {
      continue;
    }
    if (*bounds != "2,2,1") {
      return {LockPolicy::kSkip, std::string(name) + "=" + *bounds + " (a subset of the chips)"};
    }
    break;  // the whole host: the lock is taken
  }
  return {LockPolicy::kTake, ""};
}

Result<UniqueFd> TakeLibtpuLock(const std::string& path, const std::string& holder_device) {
  UniqueFd fd(::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
  if (fd.get() < 0) {
    return UnavailableError(
        "The TPU is already in use by another process probably owned by another user. Run \"$ "
        "sudo lsof -w " + holder_device + "\" to figure out which process is using the TPU. If "
        "you still get this message, run \"$ sudo rm " + path + "\".");
  }
  if (::lockf(fd.get(), F_TLOCK, 0) == 0) {
    return fd;
  }
  pid_t holder = FindDeviceHolder(holder_device);
  if (holder < 0) {
    return UnavailableError("Internal error when accessing libtpu multi-process lockfile. Run \"$ "
                            "sudo rm " + path + "\" to remove it.");
  }
  return UnavailableError("The TPU is already in use by process with pid " +
                          std::to_string(holder) +
                          ". Not attempting to load libtpu.so in this process.");
}

pid_t FindDeviceHolder(const std::string& device) {
  DIR* d = ::opendir("/proc");
  if (d == nullptr) {
    return -1;
  }
  pid_t best = -1;
  pid_t self = ::getpid();
  while (dirent* e = ::readdir(d)) {
    pid_t pid = PidOf(e->d_name);
    if (pid > 0 && pid != self && (best < 0 || pid < best) && HasFdLinkedTo(pid, device)) {
      best = pid;
    }
  }
  ::closedir(d);
  return best;
}

}  // namespace tpufleet::emulator::standin
