// What copy.cc (uploads, the relay) and copy_download.cc (downloads) share: the remote
// scripts' path expansion. Not for other callers.
//
// Thread-safety: plain values and functions.
#pragma once

#include <string>
#include <vector>

#include "control/copy.h"
#include "util/status.h"

namespace tpufleet::copy_internal {

/// `sh -c` running kExpandPath then `body`, with `args` as its positional arguments
/// ($1…): every untrusted value is an argument of its own, never spliced into the text.
std::string Script(const std::string& body, const std::vector<std::string>& args);

/// Copies SRC (one TARGET:PATH) from each worker it names to request.destination.
Result<CopyReport> Download(World& world, const CopyRequest& request, const RemotePath& src);

}  // namespace tpufleet::copy_internal
