#include "agent/host/authorized_keys.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "util/file.h"
#include "util/testing/as_nobody.h"
#include "util/testing/temp_dir.h"

namespace tpufleet::agent::host {
namespace {

const std::string kBegin = std::string(kKeysBlockBegin) + "\n";
const std::string kEnd = std::string(kKeysBlockEnd) + "\n";

TEST(MergeAuthorizedKeys, ReplacesOnlyTheBlock) {
  struct Row {
    const char* name;
    std::string old;
    std::vector<std::string> keys;
    std::string want;
  };
  const std::vector<Row> rows = {
      {"empty file", "", {"k1"}, kBegin + "k1\n" + kEnd},
      {"no keys, no block", "mine\n", {}, "mine\n"},
      {"own lines kept, block replaced at the end",
       "mine1\n" + kBegin + "old\n" + kEnd + "mine2", {"k1", "k2"},
       "mine1\nmine2\n" + kBegin + "k1\nk2\n" + kEnd},
      {"keys taken away", "mine\n" + kBegin + "old\n" + kEnd, {}, "mine\n"},
      {"two blocks (a copy) both go", kBegin + "a\n" + kEnd + "x\n" + kBegin + "b\n" + kEnd,
       {"k"}, "x\n" + kBegin + "k\n" + kEnd},
      {"BEGIN without END: only that line goes", "a\n" + kBegin + "mine\n", {},
       "a\nmine\n"},
      {"blank lines and comments kept", "# my keys\n\nmine\n", {"k"},
       "# my keys\n\nmine\n" + kBegin + "k\n" + kEnd},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(MergeAuthorizedKeys(r.old, r.keys), r.want);
    EXPECT_EQ(MergeAuthorizedKeys(r.want, r.keys), r.want) << "not idempotent";
  }
}

// A home owned by nobody in a temp dir nobody can traverse.
class SetKeys : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = NobodySkipReason()) {
      GTEST_SKIP() << *why;
    }
    ::chmod(dir_.path().c_str(), 0755);
    ids_ = *LookUpNobody();
    owner_ = {"nobody", ids_.uid, ids_.gid, dir_.Path("home")};
    ASSERT_EQ(::mkdir(owner_.home.c_str(), 0750), 0);
    ASSERT_EQ(::chown(owner_.home.c_str(), ids_.uid, ids_.gid), 0);
  }
  std::string Keys() const { return *ReadFile(owner_.home + "/.ssh/authorized_keys"); }

  TempDir dir_;
  NobodyIds ids_{};
  KeyOwner owner_;
};

TEST_F(SetKeys, WritesAsTheUserWithPrivateModes) {
  Result<bool> changed = SetAuthorizedKeys(owner_, {"ssh-ed25519 AAAA k1"});
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(Keys(), kBegin + "ssh-ed25519 AAAA k1\n" + kEnd);
  struct stat st;
  ASSERT_EQ(::stat((owner_.home + "/.ssh/authorized_keys").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ids_.uid);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((owner_.home + "/.ssh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_FALSE(*SetAuthorizedKeys(owner_, {"ssh-ed25519 AAAA k1"}));
}

TEST_F(SetKeys, NeverFollowsTheUsersSymlinks) {
  // The user points ~/.ssh at a directory of root's: nothing is written there.
  const std::string target = dir_.Path("roots");
  ASSERT_EQ(::mkdir(target.c_str(), 0777), 0);
  ASSERT_EQ(::symlink(target.c_str(), (owner_.home + "/.ssh").c_str()), 0);
  Result<bool> r = SetAuthorizedKeys(owner_, {"k"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("opening ~/.ssh"), std::string::npos) << r.status().message();
  EXPECT_NE(::access((target + "/authorized_keys").c_str(), F_OK), 0);

  // A home that is a symlink, or not the user's, is refused too.
  KeyOwner other = owner_;
  other.home = target;
  EXPECT_NE(SetAuthorizedKeys(other, {"k"}).status().message().find("opening the home"),
            std::string::npos);
}

TEST_F(SetKeys, AnAuthorizedKeysSymlinkIsNotRead) {
  ASSERT_EQ(::mkdir((owner_.home + "/.ssh").c_str(), 0700), 0);
  ASSERT_EQ(::chown((owner_.home + "/.ssh").c_str(), ids_.uid, ids_.gid), 0);
  ASSERT_EQ(::symlink("/etc/shadow", (owner_.home + "/.ssh/authorized_keys").c_str()), 0);
  EXPECT_FALSE(SetAuthorizedKeys(owner_, {"k"}).ok());
}

}  // namespace
}  // namespace tpufleet::agent::host
