// What TPUFLEET_SSH_INCLUDE (ssh_files.h kSshIncludeEnv) says about ~/.ssh/config, read
// the same for the operator's SSH names (src/app's world) and a collaborator's (`join`).
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string_view>

#include "ssh/ssh_files.h"
#include "util/status.h"

namespace tpufleet {

/// nullopt for "off" (leave ~/.ssh/config alone), else whose config EnsureSshInclude may
/// edit ("" and "auto": kMine; "force": kAnyone). InvalidArgument for any other word.
Result<std::optional<SshConfigOwner>> ParseSshIncludeMode(std::string_view mode);

}  // namespace tpufleet
