// TempDir: a fresh directory under $TMPDIR (or /tmp) for one test, removed with
// everything in it when the TempDir is destroyed, so a failing test leaves nothing. The
// one temporary-directory fixture of every module's tests (util, store, ssh, cli, …):
// a test that needs a directory of files holds one, as a member of its fixture or a
// local, and names its files with Path() or writes them with Write().
//
// Thread-safety: one owner.
#pragma once

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
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
  /// `name` (a relative path) under the directory.
  std::string Path(const std::string& name) const { return path_ + "/" + name; }
  /// Writes `text` to `name` under the directory, creating the directories between, and
  /// returns its path. The file gets the umask's mode; a test that needs another sets it.
  std::string Write(const std::string& name, const std::string& text) const {
    std::filesystem::path p = std::filesystem::path(path_) / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }

 private:
  std::string path_;
};

}  // namespace tpufleet
