// The mount options a worker's root may give for a data disk (worker_disks.h), as
// util-linux passes them to a mount helper ("-o ro,noload"): the VFS flags, and the
// ext4 options that only concern the disk itself. Anything that reaches beyond it is
// refused: journal_dev/journal_path (another device), errors=panic (the machine's
// kernel), suid and dev (nosuid and nodev are forced), remount and bind, quota files.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace tpufleet::emulator::hosts {

struct MountOptions {
  bool read_only = false;
  unsigned attributes = 0;  // MOUNT_ATTR_* for fsmount (noexec, noatime, …)
  // For fsconfig, in order: {"noload", ""} is a flag, {"errors", "remount-ro"} a string.
  std::vector<std::pair<std::string, std::string>> fs_options;
};

/// Parses a comma-separated option string. InvalidArgument naming the first option
/// not allowed.
Result<MountOptions> ParseMountOptions(std::string_view text);

}  // namespace tpufleet::emulator::hosts
