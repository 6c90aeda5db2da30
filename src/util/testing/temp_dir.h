// TempDir: a fresh directory under $TMPDIR (or /tmp) for one test, removed with
// everything in it when the TempDir is destroyed, so a failing test leaves nothing.
//
// Thread-safety: one owner.
#pragma once

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

#include <string>

namespace tpufleet {

/// Removes `path` and everything below it, not following symlinks. Errors are ignored:
/// this is clean-up.
inline void RemoveTree(const std::string& path) {
  if (path.empty()) {
    return;
  }
  ::nftw(
      path.c_str(),
      [](const char* p, const struct stat*, int, FTW*) {
        ::remove(p);
        return 0;
      },
      16, FTW_DEPTH | FTW_PHYS);
}

class TempDir {
 public:
  TempDir() {
    const char* base = ::getenv("TMPDIR");
    std::string t =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/tpufleet-test-XXXXXX";
    if (::mkdtemp(t.data()) != nullptr) {
      path_ = t;
    }
  }
  ~TempDir() { RemoveTree(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  /// "" when it could not be made.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace tpufleet
