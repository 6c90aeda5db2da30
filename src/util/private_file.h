// Reading a file that holds a secret (a token, a private key, the certificates a user
// pinned): only when no one but its owner, the user running tpufleet, could have read or
// planted it. The writing side is util/file.h's WriteFileAtomic with mode 0600, into a
// directory made by MakePrivateDirs.
//
// Thread-safety: stateless.
#pragma once

#include <cstddef>
#include <string>

#include "util/status.h"

namespace tpufleet {

/// The bytes of `path`, at most `max_bytes`, read only when it is a regular file (not a
/// symbolic link: O_NOFOLLOW; not a FIFO, which is not waited on) that the effective
/// user owns and whose group and others have no permission at all (CheckOwnedByMe with
/// 077). NotFound when it does not exist; FailedPrecondition naming the path and what is
/// wrong otherwise; InvalidArgument when it holds more than `max_bytes`.
Result<std::string> ReadPrivateFile(const std::string& path, size_t max_bytes);

}  // namespace tpufleet
