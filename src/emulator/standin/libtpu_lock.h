// What libtpu does before it touches a TPU, done by the stand-in (standin.h) exactly as
// libtpu does it (reference/monitoring.md §3, from XLA's TryAcquireTpuLock):
//
//   1. TPU_LOAD_LIBRARY=0 refuses to load; =1 loads without a lock.
//   2. ALLOW_MULTIPLE_LIBTPU_LOAD true: no lock.
//   3. TPU_CHIPS_PER_PROCESS_BOUNDS (else TPU_CHIPS_PER_HOST_BOUNDS) non-empty and not
//      "2,2,1": the process uses a subset of the chips, no lock.
//   4. Else open /tmp/libtpu_lockfile (O_CREAT|O_RDWR, 0600) and lockf(F_TLOCK); the
//      lock is held for the life of the process (the kernel drops it when the process
//      dies, even by SIGKILL; the file stays).
//
// When the lock is held, the refusal names the process that has /dev/accel0 (or
// /dev/vfio/0) open, found in /proc/*/fd, with libtpu's own words.
//
// Thread-safety: plain functions.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>

#include "util/status.h"
#include "util/unique_fd.h"

namespace tpufleet::emulator::standin {

inline constexpr const char* kLibtpuLockfile = "/tmp/libtpu_lockfile";

/// What the environment tells libtpu to do about the lock.
enum class LockPolicy {
  kTake,          // take the host-wide lock
  kSkip,          // load without it (and say why)
  kRefuseToLoad,  // TPU_LOAD_LIBRARY=0
};

struct LockDecision {
  LockPolicy policy = LockPolicy::kTake;
  std::string why;  // for kSkip and kRefuseToLoad: the variable and its value
};

/// Reads a variable of the environment; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;

/// Steps 1-3 above.
LockDecision DecideLibtpuLock(const EnvLookup& env);

/// Step 4 at `path`. Unavailable with libtpu's message when another process holds the
/// lock ("The TPU is already in use by process with pid N. …", or its "Internal error
/// when accessing libtpu multi-process lockfile" when no holder of `holder_device` is
/// found) or when the file cannot be opened ("… probably owned by another user …").
/// The descriptor keeps the lock; close it (or exit) to release it.
Result<UniqueFd> TakeLibtpuLock(const std::string& path, const std::string& holder_device);

/// The first process (by pid) with a descriptor whose link reads `device`, or -1.
/// Other users' processes are visible to root only, as for libtpu.
pid_t FindDeviceHolder(const std::string& device);

}  // namespace tpufleet::emulator::standin
