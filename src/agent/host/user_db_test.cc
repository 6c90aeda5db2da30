#include "agent/host/user_db.h"

#include <gtest/gtest.h>

#include "util/testing/temp_dir.h"

namespace tpufleet::agent::host {
namespace {

constexpr const char* kPasswd =
    "root:x:0:0:root:/root:/bin/bash\n"
    "# a comment\n"
    "+nisuser::::::\n"
    "broken:x:notanumber:0::/:/bin/sh\n"
    "short:x:5:5\n"
    "alice:x:1001:1001:Alice A:/home/alice:/bin/zsh\n"
    "svc:x:1002:1002::/var/svc:\n";
constexpr const char* kGroup =
    "root:x:0:\n"
    "alice:x:1001:alice\n"
    "docker:x:998:bob,alice\n"
    "google-sudoers:x:1000:alice\n"
    "audio:x:29:\n";

TEST(UserDb, ParsesOnlyWellFormedEntries) {
  std::vector<PasswdEntry> p = ParsePasswd(kPasswd);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[1].name, "alice");
  EXPECT_EQ(p[1].uid, 1001u);
  EXPECT_EQ(p[1].home, "/home/alice");
  EXPECT_EQ(p[1].shell, "/bin/zsh");
  std::vector<GroupEntry> g = ParseGroup(kGroup);
  ASSERT_EQ(g.size(), 5u);
  EXPECT_EQ(g[2].members, (std::vector<std::string>{"bob", "alice"}));
  EXPECT_TRUE(g[4].members.empty());
}

TEST(UserDb, FindsAUserWithPrimaryThenSupplementaryGroupsOnce) {
  Result<UserAccount> a = FindUser(kPasswd, kGroup, "alice");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->uid, 1001u);
  EXPECT_EQ(a->gid, 1001u);
  EXPECT_EQ(a->groups, (std::vector<gid_t>{1001, 998, 1000}));
  // An empty shell field is /bin/sh, as login(1) takes it.
  EXPECT_EQ(FindUser(kPasswd, kGroup, "svc")->shell, "/bin/sh");
  Result<UserAccount> none = FindUser(kPasswd, kGroup, "mallory");
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(none.status().message(), "no user named mallory on this host");
}

TEST(UserDb, NamesAUidOrGivesItsNumber) {
  std::vector<PasswdEntry> p = ParsePasswd(kPasswd);
  EXPECT_EQ(UserName(p, 1001), "alice");
  EXPECT_EQ(UserName(p, 4321), "4321");
}

TEST(UserDb, LooksUpFromAnEtcDirectory) {
  TempDir dir;
  dir.Write("etc/passwd", kPasswd);
  EXPECT_EQ(LookUpUser(dir.Path("etc"), "alice")->groups, (std::vector<gid_t>{1001}));
  dir.Write("etc/group", kGroup);
  EXPECT_EQ(LookUpUser(dir.Path("etc"), "alice")->groups.size(), 3u);
  EXPECT_EQ(LookUpUser(dir.Path("nothing"), "alice").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace tpufleet::agent::host
