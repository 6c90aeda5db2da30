#include "agent/host/tpu_scan.h"

#include <gtest/gtest.h>

#include "agent/host/testing/fake_host.h"

namespace tpufleet::agent::host {
namespace {

using testing::FakeHost;

TEST(ProcLocks, KeepsHeldLocksOnly) {
  std::vector<FileLock> l = ParseProcLocks(
      "1: POSIX  ADVISORY  WRITE 4242 fd:01:5678 0 EOF\n"
      "1: -> POSIX  ADVISORY  WRITE 4243 fd:01:5678 0 EOF\n"
      "2: FLOCK  ADVISORY  WRITE 99 00:2b:17 0 EOF\n"
      "3: OFDLCK ADVISORY  READ  -1 00:2b:18 0 EOF\n"
      "garbage\n"
      "4: POSIX  ADVISORY  WRITE x 00:2b:19 0 EOF\n");
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[0].pid, 4242);
  EXPECT_EQ(l[0].inode, 5678u);
  EXPECT_EQ(l[1].pid, 99);
  EXPECT_EQ(l[2].pid, -1);
  EXPECT_EQ(l[2].inode, 18u);
}

TEST(TpuScan, FindsDeviceHoldersWithUserAndCommand) {
  FakeHost host;
  host.AddPci("0000:00:05.0", "0x005e");
  host.AddPci("0000:00:06.0", "0x005e");
  const std::string accel1 = host.paths().dev + "/accel1";
  host.AddNode("accel0");
  host.AddNode("accel1");
  host.AddProcess(4242, 1001, {"python3", "train.py", "--steps=10"},
                  {"/dev/null", accel1, "/etc/passwd"});
  host.AddProcess(77, 0, {"sshd"}, {"/dev/null"});
  host.AddProcess(4300, 4321, {}, {accel1});  // no command line: a kernel-ish name
  TpuFacts f = ScanTpu(host.paths());
  EXPECT_EQ(f.accelerators.size(), 2u);
  ASSERT_EQ(f.holders.size(), 2u);
  EXPECT_EQ(f.holders[0].device, accel1);
  EXPECT_EQ(f.holders[0].process.pid, 4242);
  EXPECT_EQ(f.holders[0].process.user, "alice");
  EXPECT_EQ(f.holders[0].process.command, "python3 train.py --steps=10");
  EXPECT_EQ(f.holders[0].process.start_ticks, 777u);
  EXPECT_EQ(f.holders[1].process.user, "4321");
  EXPECT_EQ(f.holders[1].process.command, "[kworker]");
  EXPECT_FALSE(f.lockfile.present);
}

TEST(TpuScan, CommandLinesAreBounded) {
  FakeHost host;
  host.AddPci("0000:00:05.0", "0x005e");
  host.AddNode("accel0");
  host.AddProcess(5, 1001, {"python3", std::string(10000, 'a')}, {host.paths().dev + "/accel0"});
  TpuFacts f = ScanTpu(host.paths());
  ASSERT_EQ(f.holders.size(), 1u);
  EXPECT_EQ(f.holders[0].process.command.size(), kMaxCommandBytes);
}

TEST(TpuScan, LockfileAndItsLocker) {
  FakeHost host;
  ino_t inode = host.AddLockfile();
  TpuFacts f = ScanTpu(host.paths());
  EXPECT_TRUE(f.lockfile.present);
  EXPECT_EQ(f.lockfile.inode, inode);
  EXPECT_TRUE(f.lockfile.lockers.empty());

  host.AddProcess(4242, 1001, {"python3", "train.py"});
  host.LockedBy(4242, inode);
  f = ScanTpu(host.paths());
  ASSERT_EQ(f.lockfile.lockers.size(), 1u);
  EXPECT_EQ(f.lockfile.lockers[0].pid, 4242);
  EXPECT_EQ(f.lockfile.lockers[0].user, "alice");

  host.LockedBy(4242, inode + 1);  // a lock on another file
  EXPECT_TRUE(ScanTpu(host.paths()).lockfile.lockers.empty());
}

}  // namespace
}  // namespace tpufleet::agent::host
