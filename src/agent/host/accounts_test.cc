#include "agent/host/accounts.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "agent/host/testing/accounts_fixture.h"
#include "agent/host/user_db.h"
#include "util/file.h"
#include "util/testing/temp_dir.h"

namespace tpufleet::agent::host {
namespace {

TEST_F(Accounts, SudoFalseMeansNoSudoEvenInGoogleSudoers) {
  std::vector<AccountResult> r = Apply({{"alice", {kKey1}, true}, {"bob", {kKey2}, false}});
  ASSERT_EQ(r.size(), 2u);
  for (const AccountResult& a : r) {
    EXPECT_EQ(a.action, "created") << a.name;
    EXPECT_EQ(a.error, "") << a.name;
  }
  // Google's guest agent puts every ssh-keys user in google-sudoers.
  ASSERT_EQ(Command({"usermod", "-a", "-G", "google-sudoers", "alice"}), 0);
  ASSERT_EQ(Command({"usermod", "-a", "-G", "google-sudoers", "bob"}), 0);

  Result<UserAccount> alice = LookUpUser("/etc", "alice");
  ASSERT_TRUE(alice.ok());
  EXPECT_EQ(alice->home, "/home/alice");
  EXPECT_EQ(alice->shell, "/bin/bash");
  EXPECT_EQ(KeysOf("alice"), Block({kKey1}));
  EXPECT_EQ(KeysOf("bob"), Block({kKey2}));
  struct stat st;
  ASSERT_EQ(::stat("/home/alice/.ssh/authorized_keys", &st), 0);
  EXPECT_EQ(st.st_uid, alice->uid);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat("/etc/sudoers.d/zz_tpufleet", &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0440u);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_NE(Sudoers().find("\nalice ALL=(ALL:ALL) NOPASSWD:ALL\nbob ALL=(ALL:ALL) !ALL\n"),
            std::string::npos)
      << Sudoers();

  EXPECT_EQ(SudoAs("alice"), 0);
  EXPECT_NE(SudoAs("bob"), 0);
  // Without the rule, google-sudoers would give bob sudo: the rule is what stops it.
  ASSERT_EQ(::unlink("/etc/sudoers.d/zz_tpufleet"), 0);
  EXPECT_EQ(SudoAs("bob"), 0);
}

TEST_F(Accounts, KeysAreReplacedAndTheUsersOwnLinesKept) {
  Apply({{"bob", {kKey2}, false}});
  ASSERT_TRUE(WriteFileAtomic("/home/bob/.ssh/authorized_keys",
                              "# bob's own\n" + kKey1 + "\n" + KeysOf("bob"), 0600).ok());
  Result<UserAccount> bob = LookUpUser("/etc", "bob");
  ASSERT_EQ(::chown("/home/bob/.ssh/authorized_keys", bob->uid, bob->gid), 0);

  std::vector<AccountResult> r = Apply({{"bob", {kKey3, kKey2}, false}});
  EXPECT_EQ(r[0].action, "updated");
  EXPECT_EQ(KeysOf("bob"), "# bob's own\n" + kKey1 + "\n" + Block({kKey3, kKey2}));
  EXPECT_EQ(Apply({{"bob", {kKey3, kKey2}, false}})[0].action, "unchanged");
}

TEST_F(Accounts, AnAccountItDidNotMakeGetsOnlyItsSudoRule) {
  ASSERT_EQ(Command({"useradd", "-m", "carol"}), 0);
  std::vector<AccountResult> r = Apply({{"carol", {kKey1}, false}});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].action, "sudo_only");
  EXPECT_EQ(r[0].error, "");
  EXPECT_NE(r[0].detail.find("was not made by tpufleet-agent"), std::string::npos);
  EXPECT_EQ(KeysOf("carol"), "(none)");
  EXPECT_NE(Sudoers().find("\ncarol ALL=(ALL:ALL) !ALL\n"), std::string::npos);

  // One it made whose uid changed since is no longer its either.
  Apply({{"dave", {kKey1}, true}});
  ASSERT_EQ(Command({"usermod", "-u", "4321", "dave"}), 0);
  EXPECT_EQ(Apply({{"dave", {kKey2}, true}})[0].action, "sudo_only");
}

TEST_F(Accounts, AUserNoLongerListedLosesKeysAndSudo) {
  Apply({{"alice", {kKey1}, true}, {"bob", {kKey2}, true}});
  std::vector<AccountResult> r = Apply({{"alice", {kKey1}, true}});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].name, "bob");
  EXPECT_EQ(r[1].action, "removed");
  EXPECT_EQ(KeysOf("bob"), "");
  EXPECT_NE(Sudoers().find("\nbob ALL=(ALL:ALL) !ALL\n"), std::string::npos);
  EXPECT_NE(SudoAs("bob"), 0);
  EXPECT_EQ(Apply({{"alice", {kKey1}, true}}).size(), 1u) << "removed is said once";
}

TEST_F(Accounts, BadInputIsRefusedAloneAndChangesNothing) {
  std::vector<AccountResult> r = Apply({{"root", {kKey1}, true},
                                        {"eve", {"ssh-ed25519 AAAA\ncommand=\"sh\""}, true},
                                        {"frank", {kKey1}, false},
                                        {"frank", {kKey2}, true}});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].action, "refused");
  EXPECT_NE(r[0].error.find("system account"), std::string::npos) << r[0].error;
  EXPECT_EQ(r[1].action, "refused");
  EXPECT_NE(r[1].error.find("a key of eve"), std::string::npos) << r[1].error;
  EXPECT_EQ(r[2].action, "created");
  EXPECT_EQ(r[3].action, "refused");
  EXPECT_EQ(r[3].error, "frank is listed twice");
  EXPECT_FALSE(LookUpUser("/etc", "eve").ok());
  EXPECT_EQ(Sudoers().find("root"), std::string::npos);
}

TEST_F(Accounts, APlantedSymlinkIsNotFollowed) {
  Apply({{"alice", {kKey1}, false}});
  ASSERT_EQ(Command({"rm", "-rf", "/home/alice/.ssh"}), 0);
  ASSERT_EQ(::symlink("/etc", "/home/alice/.ssh"), 0);
  std::vector<AccountResult> r = Apply({{"alice", {kKey2}, false}});
  EXPECT_NE(r[0].error.find("opening ~/.ssh"), std::string::npos) << r[0].error;
  EXPECT_NE(::access("/etc/authorized_keys", F_OK), 0);
}

TEST(AccountsOnATempRoot, UseraddWorksBelowThePrefix) {
  if (::geteuid() != 0 || ::access("/usr/sbin/useradd", X_OK) != 0) {
    GTEST_SKIP() << "needs root and useradd, to create an account below a temp root";
  }
  TempDir root;
  ::chmod(root.path().c_str(), 0755);  // the key writer, as the user, passes through
  ASSERT_EQ(::mkdir(root.Path("etc").c_str(), 0755), 0);
  for (const char* db : {"passwd", "group", "shadow", "gshadow"}) {
    ASSERT_EQ(Command({"cp", std::string("/etc/") + db, root.Path("etc/")}), 0) << db;
  }
  HostPaths paths = HostPaths::Under(root.path());
  std::vector<AccountResult> r = ApplyAccounts(paths, {{"zed", {kKey1}, false}});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].action, "created");
  EXPECT_EQ(r[0].error, "");
  Result<UserAccount> zed = LookUpUser(root.Path("etc"), "zed");
  ASSERT_TRUE(zed.ok());
  EXPECT_EQ(zed->home, "/home/zed");
  EXPECT_EQ(ReadFile(root.Path("home/zed/.ssh/authorized_keys")).value(), Block({kKey1}));
  EXPECT_EQ(ReadFile(root.Path("var/lib/tpufleet-agent/accounts_made")).value(),
            "zed " + std::to_string(zed->uid) + "\n");
  EXPECT_NE(ReadFile(root.Path("etc/sudoers.d/zz_tpufleet")).value().find("zed ALL=(ALL:ALL) !ALL"),
            std::string::npos);
  EXPECT_FALSE(LookUpUser("/etc", "zed").ok()) << "the machine's own accounts changed";
}

}  // namespace
}  // namespace tpufleet::agent::host
