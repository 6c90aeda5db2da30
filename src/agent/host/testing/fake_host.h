// FakeHost: a temp tree laid out like the parts of a worker the agent's host functions
// read (sysfs PCI devices, /dev nodes, /proc entries, /etc/passwd, the libtpu
// lockfile), so tests of the scans need no TPU, no root and no real processes. Device
// nodes are plain files and fd links are symlinks to their paths; what is not added is
// not there. Removed with everything in it when destroyed (TempDir).
//
// Include in tests only. Thread-safety: one owner.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "agent/host/host_paths.h"
#include "util/testing/temp_dir.h"

namespace tpufleet::agent::host::testing {

class FakeHost {
 public:
  FakeHost() : paths_(HostPaths::Under(dir_.path())) {
    dir_.Write("etc/passwd",
               "root:x:0:0:root:/root:/bin/bash\n"
               "alice:x:1001:1001::/home/alice:/bin/bash\n");
    dir_.Write("etc/group", "root:x:0:\nalice:x:1001:\n");
    dir_.Write("proc/locks", "");
    dir_.Write("tmp/.keep", "");
  }

  const HostPaths& paths() const { return paths_; }
  const TempDir& dir() const { return dir_; }

  /// A PCI function with Google's vendor id; `iommu_group` > 0 adds the group link
  /// (and its /dev/vfio node), `subsystem` "" leaves subsystem_device out.
  void AddPci(const std::string& address, const std::string& device,
              const std::string& subsystem = "", int iommu_group = -1,
              const std::string& vendor = "0x1ae0") {
    const std::string dir = "sys/bus/pci/devices/" + address + "/";
    dir_.Write(dir + "vendor", vendor + "\n");
    dir_.Write(dir + "device", device + "\n");
    if (!subsystem.empty()) {
      dir_.Write(dir + "subsystem_device", subsystem + "\n");
    }
    if (iommu_group >= 0) {
      const std::string g = std::to_string(iommu_group);
      ::symlink(("../../../../kernel/iommu_groups/" + g).c_str(),
                dir_.Path(dir + "iommu_group").c_str());
      dir_.Write("dev/vfio/" + g, "");
    }
  }

  /// A device node file under dev/.
  void AddNode(const std::string& name) { dir_.Write("dev/" + name, ""); }

  /// A process with the real uid `uid`, the command line `argv` and fds linking to
  /// `targets` (absolute paths, as the kernel shows them).
  void AddProcess(int pid, int uid, const std::vector<std::string>& argv,
                  const std::vector<std::string>& targets = {}) {
    const std::string dir = "proc/" + std::to_string(pid) + "/";
    std::string cmdline;
    for (const std::string& a : argv) {
      cmdline += a + '\0';
    }
    const std::string u = std::to_string(uid);
    dir_.Write(dir + "status", "Name:\tx\nUid:\t" + u + "\t" + u + "\t" + u + "\t" + u + "\n");
    dir_.Write(dir + "cmdline", cmdline);
    dir_.Write(dir + "comm", argv.empty() ? "kworker\n" : argv[0] + "\n");
    dir_.Write(dir + "stat", std::to_string(pid) + " (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 "
                                                    "0 777 0 0\n");
    ::mkdir(dir_.Path(dir + "fd").c_str(), 0755);
    for (size_t i = 0; i < targets.size(); ++i) {
      ::symlink(targets[i].c_str(), dir_.Path(dir + "fd/" + std::to_string(i + 3)).c_str());
    }
  }

  /// Creates the libtpu lockfile; returns its inode.
  ino_t AddLockfile() {
    dir_.Write("tmp/libtpu_lockfile", "");
    struct stat st {};
    ::stat(paths_.lockfile.c_str(), &st);
    return st.st_ino;
  }

  /// /proc/locks showing `pid` holding a POSIX write lock on `inode`.
  void LockedBy(int pid, ino_t inode) {
    dir_.Write("proc/locks", "1: POSIX  ADVISORY  WRITE " + std::to_string(pid) + " 00:2b:" +
                                 std::to_string(inode) + " 0 EOF\n");
  }

 private:
  TempDir dir_;
  HostPaths paths_;
};

}  // namespace tpufleet::agent::host::testing
