// The permission bits of a file, for tests that check what tpufleet made private.
// Include in tests only.
#pragma once

#include <sys/stat.h>

#include <string>

namespace tpufleet {

/// The permission bits of `path` itself (lstat: a symlink's own), or ~0 when it is not
/// there.
inline mode_t PermissionsOf(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : static_cast<mode_t>(~0);
}

}  // namespace tpufleet
