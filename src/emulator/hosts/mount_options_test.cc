#include "emulator/hosts/mount_options.h"

#include <gtest/gtest.h>
#include <sys/mount.h>

namespace tpufleet::emulator::hosts {
namespace {

TEST(MountOptions, TakesWhatTheGuidesUse) {
  Result<MountOptions> o = ParseMountOptions("ro,noload");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_TRUE(o->read_only);
  ASSERT_EQ(o->fs_options.size(), 1u);
  EXPECT_EQ(o->fs_options[0].first, "noload");
  o = ParseMountOptions("discard,defaults,rw,noatime,errors=remount-ro,x-systemd.automount");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_FALSE(o->read_only);
  EXPECT_EQ(o->attributes, unsigned{MOUNT_ATTR_NOATIME});
  ASSERT_EQ(o->fs_options.size(), 2u);
  EXPECT_EQ(o->fs_options[1], (std::pair<std::string, std::string>{"errors", "remount-ro"}));
  EXPECT_TRUE(ParseMountOptions("").ok());
  EXPECT_TRUE(ParseMountOptions("commit=30,data=journal").ok());
}

TEST(MountOptions, RefusesWhatReachesBeyondTheDisk) {
  for (const char* bad :
       {"journal_dev=0x801", "journal_path=/dev/sda", "errors=panic", "suid", "dev", "remount",
        "bind", "usrjquota=/q", "commit=-1", "data", "errors", "noload=1"}) {
    Result<MountOptions> o = ParseMountOptions(std::string("ro,") + bad);
    ASSERT_FALSE(o.ok()) << bad;
    EXPECT_NE(o.status().message().find("is not allowed"), std::string::npos) << bad;
  }
}

}  // namespace
}  // namespace tpufleet::emulator::hosts
