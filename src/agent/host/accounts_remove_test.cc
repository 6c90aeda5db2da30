// accounts.apply's removals (`tpufleet users remove`, issue 16): the account's processes
// stopped, its keys and sudo gone and the account locked, the home kept, or with purge
// the account and home gone; what the agent did not make is refused and left alone.
// Root only, in the mount namespace of testing/accounts_fixture.h.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "agent/host/accounts.h"
#include "agent/host/testing/accounts_fixture.h"
#include "agent/host/user_db.h"
#include "agent/host/user_processes.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace tpufleet::agent::host {
namespace {

class AccountRemovals : public Accounts {
 protected:
  void TearDown() override {
    for (pid_t pid : started_) {
      if (pid > 1) {  // never -1: kill(-1) as root is every process of the machine
        // Its group: bash and the command it started, which holds the test's output
        // open (ctest would wait for it).
        ::kill(-pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
    Accounts::TearDown();
  }

  // Starts `command` (bash) as `user`, in the background, as a login would leave it;
  // `ignore_term` makes it survive SIGTERM (only SIGKILL ends it).
  void StartAs(const std::string& user, const std::string& command, bool ignore_term = false) {
    Result<UserAccount> u = LookUpUser("/etc", user);
    ASSERT_TRUE(u.ok()) << u.status().ToString();
    // "; exit": bash stays, with the command its child (a lone command it would exec).
    std::string script = (ignore_term ? "trap '' TERM; " : "") + command + "; exit";
    const int before = CountProcessesOf(paths_, u->uid);
    SpawnOptions options;
    options.own_process_group = true;
    Result<pid_t> pid = SpawnSubprocess(
        {"/usr/bin/setpriv", "--reuid=" + std::to_string(u->uid),
         "--regid=" + std::to_string(u->gid), "--clear-groups", "/bin/bash", "-c", script},
        options);
    ASSERT_TRUE(pid.ok()) << pid.status().ToString();
    started_.push_back(*pid);
    // Until the process is the user's (setpriv has run) and bash has started its child.
    for (int i = 0; i < 200 && CountProcessesOf(paths_, u->uid) < before + 2; ++i) {
      ::usleep(10000);
    }
  }
  // Whether started process `i` has ended (reaped here).
  bool Ended(size_t i) {
    int status = 0;
    if (started_[i] <= 0) {
      return true;
    }
    for (int tries = 0; tries < 300; ++tries) {
      if (::waitpid(started_[i], &status, WNOHANG) == started_[i]) {
        started_[i] = 0;  // reaped: TearDown leaves it
        return true;
      }
      ::usleep(10000);
    }
    return false;
  }
  static std::string ShadowPassword(const std::string& user) {
    for (const std::string& line : Split(ReadFile("/etc/shadow").value(), '\n')) {
      std::vector<std::string> f = Split(line, ':');
      if (f.size() >= 8 && f[0] == user) {
        return f[1] + ":" + f[7];  // the password field and the expiry date
      }
    }
    return "(none)";
  }
  uid_t Uid(const std::string& user) { return LookUpUser("/etc", user).value().uid; }

  std::vector<pid_t> started_;
};

TEST_F(AccountRemovals, ARemovalStopsEveryProcessTakesKeysAndSudoAndKeepsTheHome) {
  std::vector<AccountResult> made = Apply({{"milo", {kKey1}, true}, {"ada", {kKey2}, false}});
  ASSERT_EQ(made[0].action, "created") << made[0].error;
  const uid_t milo = Uid("milo");
  StartAs("milo", "sleep 1000");
  StartAs("milo", "sleep 1000", /*ignore_term=*/true);  // only SIGKILL ends this one
  StartAs("ada", "sleep 1000");
  ASSERT_GE(CountProcessesOf(paths_, milo), 4);
  ASSERT_EQ(SudoAs("milo"), 0);

  std::vector<AccountResult> r = Apply({{"ada", {kKey2}, false}}, {{"milo", false}});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].name, "milo");
  EXPECT_EQ(r[1].action, "revoked");
  EXPECT_EQ(r[1].error, "");
  EXPECT_NE(r[1].detail.find("processes stopped"), std::string::npos) << r[1].detail;
  EXPECT_EQ(CountProcessesOf(paths_, milo), 0);
  EXPECT_TRUE(Ended(0));
  EXPECT_TRUE(Ended(1));
  EXPECT_FALSE(Ended(2)) << "another user's process was stopped";

  EXPECT_EQ(KeysOf("milo"), Block({}));
  EXPECT_NE(Sudoers().find("\nmilo ALL=(ALL:ALL) !ALL\n"), std::string::npos) << Sudoers();
  EXPECT_NE(SudoAs("milo"), 0);
  EXPECT_EQ(ShadowPassword("milo"), "!*:1");  // locked and expired: sshd refuses it
  struct stat st;
  EXPECT_EQ(::stat("/home/milo", &st), 0) << "the home is kept";
  EXPECT_EQ(KeysOf("ada"), Block({kKey2}));

  // Listed again: unlocked, his key back.
  r = Apply({{"ada", {kKey2}, false}, {"milo", {kKey3}, false}});
  EXPECT_EQ(r[1].action, "updated") << r[1].error;
  EXPECT_EQ(ShadowPassword("milo"), "*:");
  EXPECT_EQ(KeysOf("milo"), Block({kKey3}));
}

TEST_F(AccountRemovals, APurgeRemovesTheAccountAndItsHome) {
  Apply({{"milo", {kKey1}, false}});
  StartAs("milo", "sleep 1000");
  std::vector<AccountResult> r = Apply({}, {{"milo", true}});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].action, "purged");
  EXPECT_EQ(r[0].error, "");
  EXPECT_TRUE(Ended(0));
  EXPECT_FALSE(LookUpUser("/etc", "milo").ok());
  struct stat st;
  EXPECT_NE(::stat("/home/milo", &st), 0);
  EXPECT_EQ(ReadFile(paths_.state + "/" + kMadeAccountsFile).value(), "");
  // Again: nothing is left to do, and that is no error.
  r = Apply({}, {{"milo", true}});
  EXPECT_EQ(r[0].action, "purged");
  EXPECT_EQ(r[0].detail, "no such account here");
}

// What the agent did not make is never stopped or removed: a system account, root, an
// account made by hand (tpufleet's own login is one the guest agent made), or a name
// that is listed in the same request.
TEST_F(AccountRemovals, WhatTheAgentDidNotMakeIsRefusedAndLeftAlone) {
  ASSERT_EQ(Command({"useradd", "-m", "carol"}), 0);
  StartAs("carol", "sleep 1000");
  Apply({{"milo", {kKey1}, false}});
  std::vector<AccountResult> r =
      Apply({{"milo", {kKey1}, false}},
            {{"carol", true}, {"root", true}, {"daemon", false}, {"milo", false}});
  ASSERT_EQ(r.size(), 5u);
  for (size_t i = 1; i < r.size(); ++i) {
    EXPECT_EQ(r[i].action, "refused") << r[i].name;
    EXPECT_NE(r[i].error, "") << r[i].name;
  }
  EXPECT_NE(r[1].error.find("not made by tpufleet-agent"), std::string::npos) << r[1].error;
  EXPECT_FALSE(Ended(0)) << "carol's process was stopped";
  EXPECT_TRUE(LookUpUser("/etc", "carol").ok());
  EXPECT_EQ(KeysOf("milo"), Block({kKey1}));
  EXPECT_EQ(ShadowPassword("milo"), "*:");
}

}  // namespace
}  // namespace tpufleet::agent::host
