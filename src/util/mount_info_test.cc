#include "util/mount_info.h"

#include <gtest/gtest.h>

namespace tpufleet {
namespace {

TEST(MountInfo, IdsDevicesPathsAndSourcesWithTheirEscapesUndone) {
  std::string text =
      "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
      "40 22 7:3 / /mnt/disks/my\\040data rw,relatime - ext4 /dev/sdb ro,noload\n"
      "41 22 0:5 / /proc rw master:2 - proc proc rw\n"
      "garbage\n";
  EXPECT_EQ(ParseMountInfo(text),
            (std::vector<MountInfoEntry>{{22, "8:1", "/", "/dev/sda1"},
                                         {40, "7:3", "/mnt/disks/my data", "/dev/sdb"},
                                         {41, "0:5", "/proc", "proc"}}));
}

}  // namespace
}  // namespace tpufleet
