// The fixture of the accounts tests (accounts_test.cc, accounts_remove_test.cc): the test
// process in a mount namespace of its own, with a copy of /etc and an empty /home bound
// over the real ones, so that useradd, sudo and runuser work as on a worker and the
// machine's accounts are never touched. Skipped, with the reason, when not root.
#pragma once

#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "agent/host/accounts.h"
#include "agent/host/authorized_keys.h"
#include "util/file.h"
#include "util/subprocess.h"
#include "util/testing/temp_dir.h"

namespace tpufleet::agent::host {

inline const std::string kKey1 =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIP89UbnLalkUqqvK/CcbsevZ0heDIgpouFslMneT3Am2 user1@laptop";
inline const std::string kKey2 =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHZXnDdd49jLfgX5pIRFn6hHAIyPLszzl/iVYyDw+CdF user2@laptop";
inline const std::string kKey3 =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE9GHMhXyVUCT9ZgJj8TJ1lZtebJMa2JgpBDOTjb8Oe9 user3@laptop";

inline std::string Block(const std::vector<std::string>& keys) { return MergeAuthorizedKeys("", keys); }

// The exit code of a command, as typed at a root shell.
inline int Command(const std::vector<std::string>& argv) {
  Result<ProgramResult> r = RunUserCommand(argv, "", std::chrono::seconds(60));
  return r.ok() ? r->exit_code : -1;
}

// This test process in a mount namespace of its own, with a copy of /etc and an empty
// /home bound over the real ones: useradd, sudo and runuser work as on a worker, and
// the machine's accounts are never touched. The namespace ends with the process.
class Accounts : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "needs root, to create accounts in a mount namespace of its own";
    }
    if (::access("/usr/sbin/useradd", X_OK) != 0 || ::access("/usr/bin/sudo", X_OK) != 0 ||
        ::access("/usr/sbin/runuser", X_OK) != 0) {
      GTEST_SKIP() << "needs useradd, sudo and runuser installed";
    }
    if (::unshare(CLONE_NEWNS) != 0) {
      GTEST_SKIP() << "cannot make a mount namespace here: " << std::strerror(errno);
    }
    ASSERT_EQ(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0);
    ASSERT_EQ(Command({"cp", "-a", "/etc", dir_.Path("etc")}), 0);
    ASSERT_EQ(::mkdir(dir_.Path("home").c_str(), 0755), 0);
    // The accounts made here get uids no account of the machine has, and no other test
    // process running at once (ctest -j) has: stopping their processes (a removal)
    // reaches nothing but this test's own.
    const long uid_min = 200000 + static_cast<long>(::getpid() % 10000) * 16;
    ASSERT_EQ(Command({"sed", "-i", "-e", "s/^UID_MIN.*/UID_MIN " + std::to_string(uid_min) + "/",
                       "-e", "s/^UID_MAX.*/UID_MAX " + std::to_string(uid_min + 15) + "/",
                       dir_.Path("etc/login.defs")}),
              0);
    ASSERT_EQ(::mount(dir_.Path("etc").c_str(), "/etc", nullptr, MS_BIND, nullptr), 0);
    etc_bound_ = true;
    ASSERT_EQ(::mount(dir_.Path("home").c_str(), "/home", nullptr, MS_BIND, nullptr), 0);
    home_bound_ = true;
    paths_.state = dir_.Path("state");
    // What Google's guest agent sets up on every TPU VM.
    ASSERT_EQ(Command({"groupadd", "google-sudoers"}), 0);
    ASSERT_TRUE(WriteFileAtomic("/etc/sudoers.d/google_sudoers",
                                "%google-sudoers ALL=(ALL:ALL) NOPASSWD:ALL\n", 0440).ok());
  }
  void TearDown() override {
    if (home_bound_) {
      ::umount2("/home", MNT_DETACH);
    }
    if (etc_bound_) {
      ::umount2("/etc", MNT_DETACH);
    }
  }

  std::vector<AccountResult> Apply(const std::vector<AccountSpec>& users,
                                   const std::vector<AccountRemoval>& remove = {}) {
    AccountTools tools;
    tools.stop_grace = std::chrono::milliseconds(500);
    return ApplyAccounts(paths_, users, remove, tools);
  }
  static std::string KeysOf(const std::string& user) {
    Result<std::string> text = ReadFile("/home/" + user + "/.ssh/authorized_keys");
    return text.ok() ? *text : "(none)";
  }
  // `sudo -n true` as `user`, as they would run it after logging in.
  static int SudoAs(const std::string& user) {
    return Command({"runuser", "-u", user, "--", "sudo", "-n", "true"});
  }
  static std::string Sudoers() { return ReadFile("/etc/sudoers.d/zz_tpufleet").value(); }

  TempDir dir_;
  HostPaths paths_;
  bool etc_bound_ = false;
  bool home_bound_ = false;
};

}  // namespace tpufleet::agent::host
