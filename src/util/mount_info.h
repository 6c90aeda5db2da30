// /proc/PID/mountinfo read as data: the agent checks what is mounted where before it
// mounts a data disk, and the emulator's workers find their own mounts by id.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tpufleet {

/// One line of mountinfo: fields 1, 3 and 5, and the source after " - " and the type,
/// with mountinfo's octal escapes ("\040" for a space) undone.
struct MountInfoEntry {
  uint64_t id = 0;
  std::string device;  // "8:16": the file system's device numbers (a block device's own)
  std::string path;    // the mount point
  std::string source;  // "/dev/sdb", "tmpfs"
  bool operator==(const MountInfoEntry&) const = default;
};

/// The lines of `text` in order; a line that is not mountinfo's shape is skipped.
std::vector<MountInfoEntry> ParseMountInfo(std::string_view text);

}  // namespace tpufleet
