// The machine's side of a node's data disks (worker_hosts.h: AttachedDiskSpec): one
// loop device over each disk's image while the node runs, whose numbers every worker's
// init shows as /dev/sdb, /dev/sdc, … (worker_disks.h).
//
// A loop device is made with LO_FLAGS_AUTOCLEAR and this object holds it open: the
// kernel frees it at the last close, so when the object goes (detach, Halt, Destroy,
// Shutdown) or the emulator dies, the device is freed once no worker still has it
// mounted, and the workers' mounts end with their mount namespaces. READ_ONLY disks get
// a read-only loop over a read-only file: every write on any worker fails (EROFS or
// EPERM), whatever its root does. Loops read and write through the image's page cache
// (no direct I/O), so loop devices over one file, on several nodes, see one another's
// writes once the writer's device is flushed (a detach or an unmount).
//
// Thread-safety: a LoopDevice has one owner; Attach may run on several threads.
#pragma once

#include <sys/types.h>

#include <string>

#include "emulator/worker_hosts.h"
#include "util/status.h"
#include "util/unique_fd.h"

namespace tpufleet::emulator::hosts {

/// Most data disks one node shows: /dev/sdb to /dev/sdz.
inline constexpr size_t kMaxDataDisks = 25;

class LoopDevice {
 public:
  LoopDevice() = default;

  /// A new loop device over `disk.image` (read-only when disk.read_only), named after
  /// the image in `losetup -a`. Unavailable when the machine has no free loop device,
  /// FailedPrecondition without loop support (no /dev/loop-control: `modprobe loop`).
  static Result<LoopDevice> Attach(const AttachedDiskSpec& disk);

  dev_t device() const { return device_; }
  /// "/dev/loop7".
  std::string path() const;

 private:
  UniqueFd fd_;
  dev_t device_ = 0;
};

/// OK when `disks` can be shown: at most kMaxDataDisks, GCE disk names (IsDiskName),
/// unique, images absolute paths of regular files.
Status ValidateDataDisks(const std::vector<AttachedDiskSpec>& disks);

}  // namespace tpufleet::emulator::hosts
