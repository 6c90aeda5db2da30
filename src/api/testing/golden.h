// Golden files for tests of --json output: a document is compared with a file checked
// in under the source tree (src/api/testdata/, src/cli/testdata/).
//
// To accept a change of the output on purpose, run the tests with
// TPUFLEET_UPDATE_GOLDEN=1 (e.g. `TPUFLEET_UPDATE_GOLDEN=1 build/src/api/api_test`):
// each golden test then writes what it got over its file and passes; review the diff
// (`git diff src/*/testdata`) and commit it. Include in tests only; the test target
// defines TPUFLEET_SOURCE_DIR.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "util/file.h"
#include "util/status.h"

namespace tpufleet::api_testing {

/// Whether TPUFLEET_UPDATE_GOLDEN=1 asks the golden tests to rewrite their files.
inline bool UpdatingGoldens() {
  const char* update = std::getenv("TPUFLEET_UPDATE_GOLDEN");
  return update != nullptr && std::string(update) == "1";
}

/// Expects `actual` to be the text of the file `path` (relative to the source tree,
/// "src/api/testdata/status.json"), byte for byte; rewrites the file instead when
/// updating.
inline void ExpectGolden(const std::string& path, const std::string& actual) {
  std::string full = std::string(TPUFLEET_SOURCE_DIR) + "/" + path;
  if (UpdatingGoldens()) {
    Status written = WriteFileAtomic(full, actual);
    EXPECT_TRUE(written.ok()) << written.ToString();
    return;
  }
  Result<std::string> expected = ReadFile(full);
  ASSERT_TRUE(expected.ok()) << expected.status().ToString()
                             << " (TPUFLEET_UPDATE_GOLDEN=1 writes it)";
  EXPECT_EQ(actual, *expected) << "differs from " << path
                               << "; if the change is meant, rerun with "
                                  "TPUFLEET_UPDATE_GOLDEN=1 and commit the new file";
}

}  // namespace tpufleet::api_testing
