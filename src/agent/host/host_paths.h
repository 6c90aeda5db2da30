// HostPaths: where the agent's host functions look, as one value, so every scan and
// change takes a root directory (a temp tree in tests, "/" on a worker) and nothing in
// src/agent/host names an absolute path of its own.
//
// The device nodes the scans compute (dev/accelN, dev/vfio/N) are compared with what
// processes' /proc/PID/fd links say, so `dev` must be the path those processes opened:
// a test with a real process points `proc` at the real /proc and `dev` at a temp tree,
// and the child opens the temp tree's files.
//
// Thread-safety: a plain value.
#pragma once

#include <string>

namespace tpufleet::agent::host {

/// The libtpu lockfile libtpu opens and locks with lockf (reference/monitoring.md §3).
inline constexpr const char* kLibtpuLockfile = "/tmp/libtpu_lockfile";

struct HostPaths {
  std::string sys = "/sys";           // sysfs: bus/pci/devices/…
  std::string dev = "/dev";           // device nodes: accelN, vfio/N
  std::string proc = "/proc";         // processes, their fds, locks
  std::string etc = "/etc";           // passwd, group, sudoers.d
  std::string home = "/home";         // where the accounts the agent makes live
  std::string lockfile = kLibtpuLockfile;
  std::string root = "/";             // statvfs targets, and useradd's --prefix
  std::string state = "/var/lib/tpufleet-agent";  // the agent's own records (0700)

  /// Every path below `root` ("/" gives the defaults above).
  static HostPaths Under(const std::string& root) {
    std::string r = root.empty() || root == "/" ? "" : root;
    while (!r.empty() && r.back() == '/') {
      r.pop_back();
    }
    return {r + "/sys",  r + "/dev",          r + "/proc",
            r + "/etc",  r + "/home",         r + kLibtpuLockfile,
            r.empty() ? "/" : r,              r + "/var/lib/tpufleet-agent"};
  }
};

}  // namespace tpufleet::agent::host
