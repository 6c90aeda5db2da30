// disks.mount: the fleet spec's data disks, mounted where it says on this worker.
//
// A TPU VM shows a data disk as /dev/disk/by-id/google-NAME (NAME: the disk's name in its
// zone); the guides then format a new disk and mount it by hand on every worker, and
// again after every reboot. The agent does it from the spec instead. For each disk of the
// list (the whole list the spec gives for this node):
//   - the device must be there and be a block device, else that disk is refused ("not
//     attached to this worker");
//   - the directory is made (0755) when missing; a directory on which another device is
//     mounted is refused, one on which this device is mounted is "unchanged";
//   - a read-write disk with no file system at all (`blkid -p` finds no signature) is
//     formatted ext4 first ("formatted"), as Kubernetes' format-and-mount does; a disk
//     with anything on it is never formatted, and a blank read-only disk is refused;
//   - `mount -o ro[,noload]` (noload for ext2/3/4, so a read-only device with an
//     unreplayed journal still mounts) or `mount -o rw`, by absolute path with an argv
//     array.
// A disk this agent mounted that the list no longer names is unmounted ("unmounted").
// The list is kept (kMountsFile in the state dir, 0600), and serve applies it again at
// its start, so the disks come back after a reboot, a stop/start or maintenance.
//
// Thread-safety: none; run from the agent's loop thread. REQUIRES: root.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "agent/host/host_paths.h"

namespace tpufleet::agent::host {

/// Below HostPaths::state: "<disk> <path> ro|rw" a line.
inline constexpr const char* kMountsFile = "mounts";

struct MountSpec {
  std::string disk;  // its name: /dev/disk/by-id/google-DISK
  std::string path;  // core's CheckMountPath
  bool read_only = false;
  bool operator==(const MountSpec&) const = default;
};

struct MountResult {
  std::string disk;
  std::string path;
  /// "mounted", "formatted", "unchanged", "unmounted", "refused".
  std::string action;
  std::string error;  // "" when it went through
};

/// The programs the apply runs; "" finds them in the usual sbin and bin directories.
struct MountTools {
  std::string mount;
  std::string umount;
  std::string blkid;
  std::string mkfs;  // mkfs.ext4
};

/// Applies `mounts` (see above): a result per listed disk, then one per unmounted one.
std::vector<MountResult> ApplyMounts(const HostPaths& paths, const std::vector<MountSpec>& mounts,
                                     const MountTools& tools = {});

/// The list the last ApplyMounts was given (empty when there was none), for serve's
/// start.
std::vector<MountSpec> SavedMounts(const HostPaths& paths);

}  // namespace tpufleet::agent::host
