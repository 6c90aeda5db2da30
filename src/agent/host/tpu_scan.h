// Who uses this host's TPU: the processes that have a chip's device node open, and the
// libtpu lockfile with the process that holds a lock on it. A scan only reads (sysfs,
// /proc, the lockfile's inode); tpu_verdict.h decides what the facts mean and acts.
//
//   - Device holders: every /proc/PID/fd/* link whose target is one of the device nodes
//     ScanAccelerators found (how libtpu and tpu-info find them). Only root sees the fds
//     of other users' processes; the agent runs as root.
//   - The lockfile: whether /tmp/libtpu_lockfile exists, its inode, and the processes
//     /proc/locks shows holding a lock on that inode. lockf takes POSIX record locks;
//     a waiter ("->" lines) holds nothing and is not listed. Matched by inode alone:
//     /proc/locks names the device the lock's inode lives on, which on overlay and bind
//     mounts need not be the st_dev stat reports, and a false match only makes the
//     agent refuse where it could have cleaned (the removal takes the lock itself first,
//     tpu_verdict.h). A lock whose owner /proc/locks cannot name (an OFD lock, another
//     pid namespace: pid -1 or 0) is listed with that pid.
//   - For each process: its real uid (proc/PID/status), its user's name (the host's
//     /etc/passwd, user_db.h), its command line (proc/PID/cmdline, at most
//     kMaxCommandBytes, arguments joined by spaces; "[comm]" when empty, as ps does),
//     and its start time, so a later kill can tell a reused pid.
//
// Thread-safety: stateless.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agent/host/accelerators.h"
#include "agent/host/host_paths.h"

namespace tpufleet::agent::host {

/// How much of a command line is kept: enough to recognise the program and its script,
/// bounded because a command line may be megabytes.
inline constexpr size_t kMaxCommandBytes = 512;

struct ProcessInfo {
  pid_t pid = 0;            // <= 0: a lock owner /proc/locks could not name
  uid_t uid = 0;
  std::string user;         // the uid's name, or the number as text
  std::string command;      // see above; "" for an unnamed lock owner
  uint64_t start_ticks = 0; // proc/PID/stat field 22; 0 when unknown
};

struct DeviceHolder {
  std::string device;  // the node's path, as Accelerator::path
  ProcessInfo process;
};

struct LockfileState {
  bool present = false;
  ino_t inode = 0;
  std::vector<ProcessInfo> lockers;  // the processes holding a lock on it
};

/// Everything a verdict needs, from one scan.
struct TpuFacts {
  std::vector<Accelerator> accelerators;
  std::vector<DeviceHolder> holders;  // by device, then pid
  LockfileState lockfile;
};

/// One lock line of /proc/locks.
struct FileLock {
  pid_t pid = 0;
  ino_t inode = 0;
};

/// The held locks of a /proc/locks text (waiters and malformed lines skipped).
std::vector<FileLock> ParseProcLocks(std::string_view text);

/// What /proc says of `pid`; an info with only the pid (and the user and command empty)
/// when it has ended or cannot be read.
ProcessInfo ReadProcess(const HostPaths& paths, pid_t pid);

/// Scans accelerators, their holders and the lockfile.
TpuFacts ScanTpu(const HostPaths& paths);

}  // namespace tpufleet::agent::host
