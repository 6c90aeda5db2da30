#include "agent/host/mounts.h"

#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <gtest/gtest.h>

#include "util/file.h"
#include "util/strings.h"
#include "util/subprocess.h"
#include "util/testing/temp_dir.h"

namespace tpufleet::agent::host {
namespace {

// The error, with what it should have said, when it does not say it.
::testing::AssertionResult Says(const std::string& error, const std::string& part) {
  if (error.find(part) != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "\"" << error << "\" does not say \"" << part << "\"";
}

TEST(Mounts, RefusesWhatIsNotAttachedOrNotAPlaceForADisk) {
  TempDir dir;
  HostPaths paths = HostPaths::Under(dir.path());
  std::vector<MountResult> r =
      ApplyMounts(paths, {{"data", "/mnt/data", false}, {"data", "/etc/data", true},
                          {"Bad_Name", "/mnt/x", true}});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].action, "refused");
  EXPECT_TRUE(Says(r[0].error, "disk data is not attached to this worker (no " +
                                       dir.path() + "/dev/disk/by-id/google-data)"));
  EXPECT_TRUE(Says(r[1].error, "a disk must not be mounted over /etc"));
  EXPECT_TRUE(Says(r[2].error, "expected a disk name"));
  // The list is kept all the same, for serve's next start (a disk may be attached
  // later); what could never be mounted is not read back.
  EXPECT_EQ(SavedMounts(paths), (std::vector<MountSpec>{{"data", "/mnt/data", false}}));
}

// A loop device over a file stands in for the attached disk: this test process gets a
// mount namespace of its own with a tmpfs over /mnt, so nothing of the machine's is
// mounted over, and every mount ends with the process; the loop device is detached.
class RealMounts : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "needs root, to mount a loop device in a mount namespace of its own";
    }
    for (const char* tool : {"/usr/sbin/losetup", "/usr/sbin/mkfs.ext4", "/usr/sbin/blkid"}) {
      if (::access(tool, X_OK) != 0) {
        GTEST_SKIP() << "needs " << tool;
      }
    }
    if (::unshare(CLONE_NEWNS) != 0) {
      GTEST_SKIP() << "cannot make a mount namespace here: " << std::strerror(errno);
    }
    ASSERT_EQ(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0);
    ASSERT_EQ(::mount("tmpfs", "/mnt", "tmpfs", 0, "size=1m,mode=0755"), 0);
    mnt_bound_ = true;
    std::string image = dir_.Path("disk.img");
    ASSERT_TRUE(WriteFileAtomic(image, "", 0600).ok());
    ASSERT_EQ(::truncate(image.c_str(), 16 << 20), 0);
    Result<ProgramResult> r = RunUserCommand({"/usr/sbin/losetup", "--find", "--show", image}, "",
                                             std::chrono::seconds(30));
    if (!r.ok() || r->exit_code != 0) {
      GTEST_SKIP() << "no loop device to be had: " << (r.ok() ? r->output : r.status().message());
    }
    loop_ = std::string(Trim(r->output));
    paths_ = HostPaths::Under(dir_.path());
    paths_.proc = "/proc";
    ASSERT_TRUE(MakeDirs(paths_.dev + "/disk/by-id", 0755).ok());
    ASSERT_EQ(::symlink(loop_.c_str(), (paths_.dev + "/disk/by-id/google-data").c_str()), 0);
  }
  void TearDown() override {
    if (mnt_bound_) {
      ::umount2("/mnt/data", MNT_DETACH);
      ::umount2("/mnt", MNT_DETACH);
    }
    if (!loop_.empty()) {
      (void)RunUserCommand({"/usr/sbin/losetup", "-d", loop_}, "", std::chrono::seconds(30));
    }
  }

  TempDir dir_;
  HostPaths paths_;
  std::string loop_;
  bool mnt_bound_ = false;
};

TEST_F(RealMounts, ABlankReadWriteDiskIsFormattedMountedKeptAndUnmounted) {
  std::vector<MountResult> r = ApplyMounts(paths_, {{"data", "/mnt/data", false}});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].action, "formatted") << r[0].error;
  ASSERT_TRUE(WriteFileAtomic("/mnt/data/hello", "from the read-write mount\n").ok());
  // Applied again (serve's start after a reboot, or the next up): nothing to do.
  r = ApplyMounts(paths_, {{"data", "/mnt/data", false}});
  EXPECT_EQ(r[0].action, "unchanged") << r[0].error;
  EXPECT_EQ(SavedMounts(paths_), (std::vector<MountSpec>{{"data", "/mnt/data", false}}));
  // Dropped from the list: unmounted, and what it wrote stays on the disk.
  r = ApplyMounts(paths_, {});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].action, "unmounted") << r[0].error;
  struct stat st;
  EXPECT_NE(::stat("/mnt/data/hello", &st), 0);
  // Read-only now: the file is there, nothing can be written, and nothing is formatted.
  r = ApplyMounts(paths_, {{"data", "/mnt/data", true}});
  EXPECT_EQ(r[0].action, "mounted") << r[0].error;
  Result<std::string> text = ReadFile("/mnt/data/hello");
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text, "from the read-write mount\n");
  EXPECT_FALSE(WriteFileAtomic("/mnt/data/other", "x").ok());
}

TEST_F(RealMounts, ABlankReadOnlyDiskIsRefusedAndADirectoryInUseIsLeftAlone) {
  std::vector<MountResult> r = ApplyMounts(paths_, {{"data", "/mnt/data", true}});
  EXPECT_EQ(r[0].action, "refused");
  EXPECT_TRUE(Says(r[0].error, "has no file system, and it is attached read-only"));
  ASSERT_TRUE(MakeDirs("/mnt/busy", 0755).ok());
  ASSERT_EQ(::mount("tmpfs", "/mnt/busy", "tmpfs", 0, "size=1m"), 0);
  r = ApplyMounts(paths_, {{"data", "/mnt/busy", false}});
  EXPECT_EQ(r[0].action, "refused");
  EXPECT_TRUE(Says(r[0].error, "/mnt/busy already has tmpfs mounted on it"));
}

}  // namespace
}  // namespace tpufleet::agent::host
