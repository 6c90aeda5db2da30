#include "agent/host/accelerators.h"

#include <gtest/gtest.h>

#include "agent/host/testing/fake_host.h"

namespace tpufleet::agent::host {
namespace {

using testing::FakeHost;

TEST(Accelerators, ClassifiesEveryFamilyAndNothingElse) {
  struct Row {
    const char* device;
    const char* subsystem;
    const char* family;
  };
  for (const Row& r : std::initializer_list<Row>{
           {"0x0027", "0x004e", "v2"},     {"0x0027", "0x004f", "v3"},
           {"0x0027", "0x0000", ""},       {"0x005e", "", "v4"},
           {"0x0063", "", "v5litepod"},    {"0x0062", "0x1234", "v5p"},
           {"0x006f", "", "v6e"},          {"0x0076", "", "tpu7x"},
           {"0x0042", "", ""} /* gVNIC */, {"", "", ""}}) {
    EXPECT_EQ(TpuFamily(r.device, r.subsystem), r.family) << r.device << " " << r.subsystem;
  }
}

TEST(Accelerators, V4HostHasAccelNodesInPciOrder) {
  FakeHost host;
  host.AddPci("0000:00:07.0", "0x005e");
  host.AddPci("0000:00:05.0", "0x005e");
  host.AddPci("0000:00:04.0", "0x0042");  // the gVNIC: Google's, not a TPU
  host.AddPci("0000:00:06.0", "0x005E");  // sysfs may print it in capitals
  host.AddPci("0000:00:08.0", "0x005e");
  host.AddPci("0000:00:03.0", "0x1234", "", -1, "0x8086");
  std::vector<Accelerator> a = ScanAccelerators(host.paths());
  ASSERT_EQ(a.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(a[i].index, i);
    EXPECT_EQ(a[i].family, "v4");
    EXPECT_EQ(a[i].path, host.paths().dev + "/accel" + std::to_string(i));
  }
  EXPECT_EQ(a[0].pci_address, "0000:00:05.0");
  EXPECT_EQ(ChipCount(a), 4);
}

TEST(Accelerators, AccelClassEntryNamesTheNode) {
  FakeHost host;
  host.AddPci("0000:00:05.0", "0x0027", "0x004f");
  host.dir().Write("sys/bus/pci/devices/0000:00:05.0/accel/accel3/dev", "121:3\n");
  std::vector<Accelerator> a = ScanAccelerators(host.paths());
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].family, "v3");
  EXPECT_EQ(a[0].path, host.paths().dev + "/accel3");
}

TEST(Accelerators, VfioNodesComeFromTheIommuGroupNotTheIndex) {
  FakeHost host;
  host.AddPci("0000:00:05.0", "0x0063", "", 11);
  host.AddPci("0000:00:06.0", "0x0063", "", 12);
  host.AddPci("0000:00:07.0", "0x0063");  // no iommu_group link: its node is unknown
  std::vector<Accelerator> a = ScanAccelerators(host.paths());
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0].path, host.paths().dev + "/vfio/11");
  EXPECT_EQ(a[1].path, host.paths().dev + "/vfio/12");
  EXPECT_EQ(a[2].path, "");
  EXPECT_EQ(a[2].family, "v5litepod");
}

TEST(Accelerators, Tpu7xChipsAreCountedBySlot) {
  FakeHost host;
  host.AddPci("0000:00:05.0", "0x0076", "", 1);
  host.AddPci("0000:00:05.1", "0x0076", "", 2);
  host.AddPci("0000:00:06.0", "0x0076", "", 3);
  host.AddPci("0000:00:06.1", "0x0076", "", 4);
  std::vector<Accelerator> a = ScanAccelerators(host.paths());
  EXPECT_EQ(a.size(), 4u);
  EXPECT_EQ(ChipCount(a), 2);
}

TEST(Accelerators, NoSysfsIsNoAccelerators) {
  EXPECT_TRUE(ScanAccelerators(HostPaths::Under("/nonexistent-root")).empty());
}

}  // namespace
}  // namespace tpufleet::agent::host
