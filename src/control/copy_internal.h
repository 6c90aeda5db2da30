// What copy.cc (uploads, the relay) and copy_download.cc (downloads) share: the remote
// scripts' path expansion and a private local directory. Not for other callers.
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

/// A new directory that only this user can enter (mkdtemp makes it 0700), removed with
/// what is in it when this goes: for what cp writes here that nobody else may read or
/// plant (a directory's tar, a download's staging).
class PrivateDir {
 public:
  PrivateDir() = default;
  PrivateDir(const PrivateDir&) = delete;
  PrivateDir& operator=(const PrivateDir&) = delete;
  ~PrivateDir();
  /// Makes PARENT/PREFIXxxxxxx (once; later calls keep the first).
  Status Make(const std::string& parent, const std::string& prefix);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// Copies SRC (one TARGET:PATH) from each worker it names to request.destination.
Result<CopyReport> Download(World& world, const CopyRequest& request, const RemotePath& src);

}  // namespace tpufleet::copy_internal
