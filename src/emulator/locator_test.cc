// The emulator's state dir and token file as another local user would attack them
// (issue 10, finding 6): a directory nobody made first is refused and left untouched,
// and a token file others may read or change is not used.
#include "emulator/locator.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <string>

#include "util/testing/temp_dir.h"
#include "util/file.h"
#include "util/testing/as_nobody.h"

namespace tpufleet::emulator {
namespace {

using Env = std::map<std::string, std::string>;

struct stat Stat(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st;
}

TEST(Issue10, AStateDirNobodyMadeIsRefusedAndLeftUntouched) {
  if (auto why = NobodySkipReason()) {
    GTEST_SKIP() << *why;
  }
  TempDir tmp;
  ASSERT_EQ(::chmod(tmp.path().c_str(), 0711), 0);
  std::string shared = tmp.path() + "/shared";  // like /tmp: anyone may make things here
  ASSERT_EQ(::mkdir(shared.c_str(), 01777), 0);
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);
  std::string dir = shared + "/emulator";
  ASSERT_EQ(RunAsNobody([&] { return ::mkdir(dir.c_str(), 0700) == 0 ? 0 : 1; }), 0);

  Status s = ClaimEmulatorStateDir(dir, Env{});
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("belongs to nobody"), std::string::npos) << s.message();
  EXPECT_EQ(CheckEmulatorStateDir(dir, Env{}).code(), StatusCode::kPermissionDenied);
  EXPECT_FALSE(IsEmulatorStateDir(dir));
  EXPECT_EQ(Stat(dir).st_uid, LookUpNobody()->uid) << "the emulator took nobody's dir";
}

TEST(Issue10, AStateDirOthersMayWriteOrALinkIsRefused) {
  TempDir tmp;
  std::string open = tmp.path() + "/open";
  ASSERT_EQ(::mkdir(open.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(open.c_str(), 0777), 0);
  EXPECT_EQ(ClaimEmulatorStateDir(open, Env{}).code(), StatusCode::kPermissionDenied);
  EXPECT_FALSE(IsEmulatorStateDir(open));
  std::string link = tmp.path() + "/link";
  std::string mine = tmp.path() + "/mine";
  ASSERT_EQ(::mkdir(mine.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(mine.c_str(), link.c_str()), 0);
  EXPECT_EQ(ClaimEmulatorStateDir(link, Env{}).code(), StatusCode::kPermissionDenied);
  EXPECT_FALSE(IsEmulatorStateDir(mine));
}

TEST(Issue10, ANewStateDirIsTheOwnersAlone) {
  TempDir tmp;
  std::string dir = tmp.path() + "/a/b/emulator";
  ASSERT_EQ(ClaimEmulatorStateDir(dir, Env{}), Status::Ok());
  EXPECT_TRUE(IsEmulatorStateDir(dir));
  EXPECT_EQ(Stat(dir).st_mode & 07777, 0700u);
  EXPECT_EQ(Stat(tmp.path() + "/a").st_mode & 07777, 0700u);
  ASSERT_EQ(ClaimEmulatorStateDir(dir, Env{}), Status::Ok()) << "its own dir is kept";

  // Under sudo the dir is the sudo user's; the directories made above it too when they
  // are in that user's home (nobody's, /nonexistent, is not: they stay root's).
  if (::geteuid() != 0 || !LookUpNobody()) {
    GTEST_SKIP() << "needs root and a user nobody to check SUDO_UID ownership";
  }
  NobodyIds nobody = *LookUpNobody();
  Env sudo{{"SUDO_UID", std::to_string(nobody.uid)}, {"SUDO_GID", std::to_string(nobody.gid)}};
  std::string theirs = tmp.path() + "/home/u/emulator";
  ASSERT_EQ(ClaimEmulatorStateDir(theirs, sudo), Status::Ok());
  EXPECT_EQ(Stat(theirs).st_uid, nobody.uid);
  EXPECT_EQ(Stat(tmp.path() + "/home").st_uid, 0u);
  EXPECT_EQ(EmulatorOwnerOf(sudo).uid, nobody.uid);
}

TEST(Issue10, ATokenFileOthersMayReadOrChangeIsNotUsed) {
  TempDir tmp;
  std::string dir = tmp.path() + "/emulator";
  ASSERT_EQ(ClaimEmulatorStateDir(dir, Env{}), Status::Ok());
  std::string token = dir + "/" + kEmulatorTokenFile;
  ASSERT_EQ(WriteFileAtomic(token, std::string(kEmulatorTokenPrefix) + "abc\n", 0600),
            Status::Ok());
  Result<std::string> read = ReadEmulatorToken(token, Env{});
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, std::string(kEmulatorTokenPrefix) + "abc");

  ASSERT_EQ(::chmod(token.c_str(), 0644), 0);
  EXPECT_EQ(ReadEmulatorToken(token, Env{}).status().code(), StatusCode::kPermissionDenied);
  ASSERT_EQ(::chmod(token.c_str(), 0600), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 0770), 0);
  EXPECT_EQ(ReadEmulatorToken(token, Env{}).status().code(), StatusCode::kPermissionDenied);
  ASSERT_EQ(::chmod(dir.c_str(), 0700), 0);
  if (auto why = NobodySkipReason()) {
    GTEST_SKIP() << *why;
  }
  ASSERT_EQ(::chown(token.c_str(), LookUpNobody()->uid, LookUpNobody()->gid), 0);
  EXPECT_EQ(ReadEmulatorToken(token, Env{}).status().code(), StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace tpufleet::emulator
