// NobodysDir: a directory that user nobody made in a shared, sticky one (as in /tmp),
// where tpufleet would keep a file of its own: the tests that an SSH file (the fleet
// key, the holder's socket) in another user's directory is refused.
//
// REQUIRES: NobodySkipReason() is nullopt (the test runs as root and nobody exists).
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "util/testing/as_nobody.h"
#include "util/testing/temp_dir.h"

namespace tpufleet {

/// tmp/NAME made by nobody with `mode`, after tmp is made mode 01777 (shared, sticky);
/// "" (and the test fails) when it cannot be made.
inline std::string NobodysDir(const TempDir& tmp, const std::string& name, mode_t mode) {
  if (::chmod(tmp.path().c_str(), 01777) != 0) {
    ADD_FAILURE() << "chmod 01777 " << tmp.path();
    return "";
  }
  std::string dir = tmp.path() + "/" + name;
  if (RunAsNobody([&] { return ::mkdir(dir.c_str(), mode) == 0 ? 0 : 1; }) != 0) {
    ADD_FAILURE() << "nobody could not make " << dir;
    return "";
  }
  return dir;
}

}  // namespace tpufleet
