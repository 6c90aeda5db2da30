// System tests of the emulated accelerators on real workers (issue 12): the chips a
// TPU VM of the family shows, and the device fault. As root only, like the rest of
// NamespaceHosts' system tests (namespace_hosts_fixture.h).
#include "emulator/hosts/namespace_hosts_fixture.h"

namespace tpufleet::emulator::hosts_test {
namespace {

class AcceleratorTest : public NamespaceHostsTest {
 protected:
  // What alice sees on the worker: every PCI function with its ids, and the nodes.
  std::string Devices(const std::string& address) {
    ProgramResult r = Ssh("alice", address,
                          "cd /sys/bus/pci/devices && for d in *; do "
                          "echo $d $(cat $d/vendor $d/device) "
                          "sub=$(cat $d/subsystem_device 2>/dev/null || echo -) "
                          "group=$(basename \"$(readlink $d/iommu_group)\"); done; "
                          "stat -c '%n %F %a' /dev/accel* /dev/vfio/* 2>/dev/null; true");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return r.output;
  }
};

TEST_F(AcceleratorTest, AV4WorkerShowsFourChipsAsAccelNodes) {
  WorkerInfo w = BootOne("v4-8", "v4", 4);
  std::string want;
  for (int i = 0; i < 4; ++i) {
    want += "0000:00:0" + std::to_string(4 + i) + ".0 0x1ae0 0x005e sub=- group=\n";
  }
  for (int i = 0; i < 4; ++i) {
    want += "/dev/accel" + std::to_string(i) + " character special file 666\n";
  }
  EXPECT_EQ(Devices(w.address), want);
}

TEST_F(AcceleratorTest, AV5eWorkerShowsVfioGroups) {
  WorkerInfo w = BootOne("v5litepod-4", "v5litepod", 4);
  std::string want;
  for (int i = 0; i < 4; ++i) {
    want += "0000:00:0" + std::to_string(4 + i) + ".0 0x1ae0 0x0063 sub=- group=" +
            std::to_string(i) + "\n";
  }
  for (const char* node : {"0", "1", "2", "3", "vfio"}) {
    want += std::string("/dev/vfio/") + node + " character special file 666\n";
  }
  EXPECT_EQ(Devices(w.address), want);
}

TEST_F(AcceleratorTest, AV3WorkerIsToldApartBySubsystem) {
  WorkerInfo w = BootOne("v3-8", "v3", 4);
  std::string seen = Devices(w.address);
  EXPECT_NE(seen.find("0000:00:04.0 0x1ae0 0x0027 sub=0x004f group=\n"), std::string::npos)
      << seen;
}

TEST_F(AcceleratorTest, TheWorkersRootCannotChangeTheChips) {
  WorkerInfo w = BootOne("v4-8", "v4", 4);
  ProgramResult r = Ssh("alice", w.address,
                        "sudo -n rm -rf /sys/bus/pci/devices/0000:00:04.0 /dev/accel0 2>&1; "
                        "ls /sys/bus/pci/devices /dev/accel0");
  EXPECT_NE(r.output.find("Read-only file system"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("0000:00:04.0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("/dev/accel0"), std::string::npos) << r.output;
}

TEST_F(AcceleratorTest, ADeviceFaultRemovesTheChipUntilItEndsAcrossAReboot) {
  WorkerInfo w = BootOne("v5litepod-4", "v5litepod", 4);
  ASSERT_TRUE(hosts_->SetDeviceRemoved(kNode, 0, 1, true).ok());
  auto shown = [&] {
    ProgramResult r = Ssh("alice", w.address, "ls /sys/bus/pci/devices /dev/vfio | tr '\\n' ' '");
    return r.output;
  };
  EXPECT_EQ(shown(), "/dev/vfio: 0 2 3 vfio  /sys/bus/pci/devices: 0000:00:04.0 0000:00:06.0 "
                     "0000:00:07.0 ");
  // Kept across a stop and start.
  ASSERT_TRUE(hosts_->Halt(kNode).ok());
  w = BootOne("v5litepod-4", "v5litepod", 4);
  EXPECT_EQ(shown(), "/dev/vfio: 0 2 3 vfio  /sys/bus/pci/devices: 0000:00:04.0 0000:00:06.0 "
                     "0000:00:07.0 ");
  ASSERT_TRUE(hosts_->SetDeviceRemoved(kNode, 0, 1, false).ok());
  EXPECT_EQ(shown(), "/dev/vfio: 0 1 2 3 vfio  /sys/bus/pci/devices: 0000:00:04.0 0000:00:05.0 "
                     "0000:00:06.0 0000:00:07.0 ");
  EXPECT_EQ(hosts_->SetDeviceRemoved(kNode, 0, 4, true).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(hosts_->SetDeviceRemoved(kNode, 1, 0, true).code(), StatusCode::kInvalidArgument);
}

TEST_F(AcceleratorTest, NothingChangesOnTheMachine) {
  std::vector<std::string> before = ListDirectory("/sys/bus/pci/devices");
  struct stat st;
  bool accel_before = ::stat("/dev/accel0", &st) == 0;
  BootOne("v4-8", "v4", 4);
  EXPECT_EQ(ListDirectory("/sys/bus/pci/devices"), before);
  EXPECT_EQ(::stat("/dev/accel0", &st) == 0, accel_before);
}

}  // namespace
}  // namespace tpufleet::emulator::hosts_test
