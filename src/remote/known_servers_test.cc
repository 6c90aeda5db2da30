// The file of pinned server certificates as a user meets it: found under XDG_CONFIG_HOME
// or HOME, written private, a line replaced, a bad line or a file others may read refused.
#include "remote/known_servers.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "util/fingerprint.h"
#include "util/file.h"
#include "util/testing/temp_dir.h"

namespace tpufleet::remote {
namespace {

const std::string kA = Sha256Fingerprint("a");
const std::string kB = Sha256Fingerprint("b");

TEST(KnownServersPath, FollowsXdgThenHome) {
  EXPECT_EQ(*KnownServersPath({{"HOME", "/home/milo"}}),
            "/home/milo/.config/tpufleet/known_servers");
  EXPECT_EQ(*KnownServersPath({{"HOME", "/home/milo"}, {"XDG_CONFIG_HOME", "/cfg"}}),
            "/cfg/tpufleet/known_servers");
  EXPECT_EQ(KnownServersPath({}).status().code(), StatusCode::kFailedPrecondition);
}

TEST(KnownServers, PinsPrivatelyAndReplacesOneLine) {
  TempDir dir;
  std::string path = dir.Path("cfg/tpufleet/known_servers");
  EXPECT_EQ(*PinnedFingerprint(path, "lab:8471"), std::nullopt);  // no file yet
  ASSERT_EQ(PinFingerprint(path, "lab:8471", kA), Status::Ok());
  ASSERT_EQ(PinFingerprint(path, "127.0.0.1:9000", kB), Status::Ok());
  EXPECT_EQ(*PinnedFingerprint(path, "lab:8471"), kA);
  EXPECT_EQ(*PinnedFingerprint(path, "127.0.0.1:9000"), kB);
  EXPECT_EQ(*PinnedFingerprint(path, "lab:8472"), std::nullopt);
  ASSERT_EQ(PinFingerprint(path, "lab:8471", kB), Status::Ok());
  EXPECT_EQ(*ReadFile(path), "lab:8471 " + kB + "\n127.0.0.1:9000 " + kB + "\n");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(::stat(dir.Path("cfg/tpufleet").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
}

TEST(KnownServers, RefusesABadLineAndAFileOthersMayRead) {
  TempDir dir;
  std::string path = dir.Path("known_servers");
  ASSERT_EQ(WriteFileAtomic(path, "# mine\n\nlab:8471 md5:00\n", 0600), Status::Ok());
  Result<std::optional<std::string>> bad = PinnedFingerprint(path, "lab:8471");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), path + ":3: expected \"HOST:PORT SHA256:…\"");
  ASSERT_EQ(WriteFileAtomic(path, "# mine\nlab:8471 " + kA + "\n", 0644), Status::Ok());
  Result<std::optional<std::string>> shared = PinnedFingerprint(path, "lab:8471");
  EXPECT_EQ(shared.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(shared.status().message(), path + " has mode 0644: others may read or write it");
  EXPECT_EQ(PinFingerprint(path, "lab:8471", kB).code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tpufleet::remote
