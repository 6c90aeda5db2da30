#include "ssh/fleet_key.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>
#include <thread>
#include <vector>

#include "core/fleet_spec.h"
#include "ssh/testing/nobody_dir.h"
#include "ssh/testing/temp_dir.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/testing/as_nobody.h"
#include "util/testing/status_printer.h"

namespace tpufleet {
namespace {

unsigned ModeOf(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0xffff;
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  while (dirent* e = d != nullptr ? ::readdir(d) : nullptr) {
    std::string n = e->d_name;
    if (n != "." && n != "..") {
      names.push_back(n);
    }
  }
  if (d != nullptr) {
    ::closedir(d);
  }
  return names;
}

TEST(FleetKey, GeneratesOnceAndReadsBack) {
  TempDir tmp;
  std::string dir = tmp.path() + "/state/keys";
  Result<FleetKey> key = EnsureFleetKey(dir);
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ(key->private_key_path, dir + "/id_ed25519");
  EXPECT_TRUE(StartsWith(key->public_key, "ssh-ed25519 AAAA")) << key->public_key;
  EXPECT_TRUE(key->public_key.ends_with(" tpufleet")) << key->public_key;
  EXPECT_EQ(key->public_key.find('\n'), std::string::npos);
  EXPECT_EQ(CheckSshPublicKey(key->public_key), Status::Ok());
  EXPECT_EQ(ModeOf(dir), 0700u);
  EXPECT_EQ(ModeOf(key->private_key_path), 0600u);
  // The public half comes from the private key and agrees with ssh-keygen's .pub.
  Result<std::string> pub = ReadFile(key->private_key_path + ".pub");
  ASSERT_TRUE(pub.ok());
  EXPECT_EQ(std::string(Trim(*pub)), key->public_key);

  Result<FleetKey> again = EnsureFleetKey(dir);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->public_key, key->public_key);
  EXPECT_EQ(Entries(dir).size(), 2u);  // id_ed25519 and its .pub, no leftovers
}

TEST(FleetKey, RefusesAKeyReadableByOthers) {
  TempDir tmp;
  Result<FleetKey> key = EnsureFleetKey(tmp.path());
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  ASSERT_EQ(::chmod(key->private_key_path.c_str(), 0644), 0);
  Result<FleetKey> again = EnsureFleetKey(tmp.path());
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(again.status().message().find("permissions 0644 are too open"), std::string::npos)
      << again.status().ToString();
  EXPECT_NE(again.status().message().find("chmod 600"), std::string::npos);
}

TEST(FleetKey, RefusesAFileThatIsNotAKey) {
  TempDir tmp;
  ASSERT_EQ(WriteFileAtomic(tmp.path() + "/id_ed25519", "hello\n", 0600), Status::Ok());
  Result<FleetKey> key = EnsureFleetKey(tmp.path());
  EXPECT_EQ(key.status().code(), StatusCode::kFailedPrecondition) << key.status().ToString();
}

TEST(FleetKey, RacingCallersEndWithOneKey) {
  for (int round = 0; round < 5; ++round) {
    TempDir tmp;
    constexpr int kThreads = 6;
    std::vector<Result<FleetKey>> results(kThreads, InternalError("not run"));
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] { results[i] = EnsureFleetKey(tmp.path()); });
    }
    for (std::thread& t : threads) {
      t.join();
    }
    std::set<std::string> keys;
    for (const Result<FleetKey>& r : results) {
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      keys.insert(r->public_key);
    }
    EXPECT_EQ(keys.size(), 1u);
    Result<std::string> pub = ReadFile(tmp.path() + "/id_ed25519.pub");
    ASSERT_TRUE(pub.ok());
    EXPECT_EQ(std::string(Trim(*pub)), *keys.begin());
    EXPECT_EQ(Entries(tmp.path()).size(), 2u);
  }
}

// ---- Issue 10: a key or a key directory someone else owns ----

TEST(Issue10, AFleetKeyOwnedByAnotherUserIsRefused) {
  if (auto why = NobodySkipReason()) {
    GTEST_SKIP() << *why;
  }
  // A 0600 key that is nobody's: nobody can read it, or swap it, and then log in to
  // every node with it. Its mode alone said nothing.
  TempDir tmp;
  Result<FleetKey> key = EnsureFleetKey(tmp.path());
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  NobodyIds nobody = *LookUpNobody();
  ASSERT_EQ(::chown(key->private_key_path.c_str(), nobody.uid, nobody.gid), 0);
  Result<FleetKey> again = EnsureFleetKey(tmp.path());
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(again.status().message(),
            key->private_key_path + " belongs to nobody (uid " + std::to_string(nobody.uid) +
                "), not to root (uid 0), who runs tpufleet; the fleet key must be yours "
                "alone: move it away and tpufleet will make a new one");
}

TEST(Issue10, AFleetKeyDirectoryPreCreatedByAnotherUserIsRefused) {
  if (auto why = NobodySkipReason()) {
    GTEST_SKIP() << *why;
  }
  TempDir tmp;
  std::string dir = NobodysDir(tmp, "ssh", 0700);
  ASSERT_FALSE(dir.empty());
  Result<FleetKey> key = EnsureFleetKey(dir);
  EXPECT_EQ(key.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(key.status().message().find(dir + " belongs to nobody"), std::string::npos)
      << key.status().ToString();
  EXPECT_TRUE(Entries(dir).empty());  // no key was made in it
}

TEST(Issue10, AFleetKeyThatIsASymlinkIsRefused) {
  TempDir tmp;
  Result<FleetKey> key = EnsureFleetKey(tmp.path() + "/a");
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  ASSERT_EQ(::mkdir((tmp.path() + "/b").c_str(), 0700), 0);
  ASSERT_EQ(::symlink(key->private_key_path.c_str(), (tmp.path() + "/b/id_ed25519").c_str()), 0);
  Result<FleetKey> linked = EnsureFleetKey(tmp.path() + "/b");
  EXPECT_EQ(linked.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(linked.status().message().find("is not a regular file"), std::string::npos)
      << linked.status().ToString();
}

}  // namespace
}  // namespace tpufleet
