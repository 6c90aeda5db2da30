// Whole-file reads and atomic writes. Errors come back as Status with the path and
// the system's reason ("/x/fleet.yaml: No such file or directory").
//
// Thread-safety: stateless.
#pragma once

#include <string>

#include "util/status.h"

namespace tpufleet {

/// The bytes of `path`. NotFound when it does not exist.
Result<std::string> ReadFile(const std::string& path);

/// Writes `data` to `path` through a temporary file and rename(2), so readers see the
/// old or the new content, never half. `mode` is the new file's permission bits
/// (0600 for anything holding a credential).
Status WriteFileAtomic(const std::string& path, const std::string& data, int mode = 0644);

/// "<path>: <strerror(err)>" for a system call on `path` that failed with `err`:
/// NotFound (ENOENT), PermissionDenied (EACCES, EPERM) or Internal.
Status ErrnoStatus(const std::string& path, int err);

}  // namespace tpufleet
