// The token file as a user on a shared machine would meet it: made private at first
// start, kept afterwards, refused when someone else could read or plant it.
#include "server/token.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "util/file.h"
#include "util/testing/as_nobody.h"
#include "util/testing/file_mode.h"
#include "util/testing/temp_dir.h"

namespace tpufleet::server {
namespace {

TEST(ServeToken, MadeAtFirstStartPrivateAndKept) {
  TempDir dir;
  Result<std::string> first = LoadOrMakeServeToken(dir.path());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->rfind(kServeTokenPrefix, 0), 0u);
  EXPECT_EQ(first->size(), kServeTokenPrefix.size() + 43);  // 32 bytes in base64url
  EXPECT_EQ(PermissionsOf(ServeTokenPath(dir.path())), 0600u);
  EXPECT_EQ(PermissionsOf(dir.Path("serve")), 0700u);
  Result<std::string> again = LoadOrMakeServeToken(dir.path());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *first);
  EXPECT_EQ(*ReadFile(ServeTokenPath(dir.path())), *first + "\n");
}

TEST(ServeToken, ATokenOthersMayReadIsRefused) {
  TempDir dir;
  ASSERT_TRUE(LoadOrMakeServeToken(dir.path()).ok());
  std::string path = ServeTokenPath(dir.path());
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  Result<std::string> t = LoadOrMakeServeToken(dir.path());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(t.status().message().find(path + " has mode 0644"), std::string::npos)
      << t.status().message();
}

TEST(ServeToken, ASymlinkOrAStrangerIsRefused) {
  TempDir dir;
  ASSERT_TRUE(MakePrivateDirs(dir.Path("serve")).ok());
  std::string elsewhere = dir.Write("planted", "tpufleet-serve-planted\n");
  ASSERT_EQ(::symlink(elsewhere.c_str(), ServeTokenPath(dir.path()).c_str()), 0);
  Result<std::string> t = LoadOrMakeServeToken(dir.path());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("symbolic link"), std::string::npos)
      << t.status().message();

  ASSERT_EQ(::unlink(ServeTokenPath(dir.path()).c_str()), 0);
  ASSERT_TRUE(WriteFileAtomic(ServeTokenPath(dir.path()), "not a token\n", 0600).ok());
  t = LoadOrMakeServeToken(dir.path());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
}

TEST(ServeToken, AnotherUsersTokenIsRefused) {
  if (auto why = NobodySkipReason()) {
    GTEST_SKIP() << *why;
  }
  TempDir dir;
  ASSERT_TRUE(LoadOrMakeServeToken(dir.path()).ok());
  std::optional<NobodyIds> nobody = LookUpNobody();
  ASSERT_TRUE(nobody);
  ASSERT_EQ(::chown(ServeTokenPath(dir.path()).c_str(), nobody->uid, nobody->gid), 0);
  Result<std::string> t = LoadOrMakeServeToken(dir.path());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("belongs to nobody"), std::string::npos)
      << t.status().message();
}

}  // namespace
}  // namespace tpufleet::server
