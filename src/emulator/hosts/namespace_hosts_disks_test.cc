// System tests of data disks on real workers (issue 15): loop devices shown as /dev/sdb,
// mounted by the worker's root through mount(8) and the init's helper (worker_disks.h),
// read-only where attached so, shared read-only across nodes, and nothing else made
// mountable. Real sshd, util-linux and ext4; root only (namespace_hosts_fixture.h).
#include "emulator/hosts/loop_devices.h"
#include "emulator/hosts/namespace_hosts_fixture.h"

namespace tpufleet::emulator::hosts_test {
namespace {

constexpr const char* kMountDir = "/mnt/disks/data";

class DataDiskTest : public NamespaceHostsTest {
 protected:
  void SetUp() override {
    NamespaceHostsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) {
      return;
    }
    losetup_ = Must(FindProgram("losetup", "util-linux"));
    image_ = root_ + "/data.img";
    ASSERT_TRUE(WriteFileAtomic(image_, "", 0600).ok());
    ASSERT_EQ(::truncate(image_.c_str(), 64 << 20), 0);
    // Containers often have no loop devices (or no nodes for new ones).
    Result<hosts::LoopDevice> probe = hosts::LoopDevice::Attach({"probe", image_, true});
    if (!probe.ok()) {
      GTEST_SKIP() << "needs loop devices: " << probe.status().ToString();
    }
  }

  // Boots `spec` and keeps every booted node's host keys for ssh.
  std::vector<WorkerInfo> BootNode(const NodeHostSpec& spec) {
    std::vector<WorkerInfo> w = BootOrDie(spec);
    for (const WorkerInfo& i : w) {
      known_ += i.address + " " + i.host_key + "\n";
    }
    EXPECT_TRUE(WriteFileAtomic(root_ + "/known_hosts", known_).ok());
    return w;
  }

  NodeHostSpec NodeWithDisk(const std::string& id, int workers, bool read_only) {
    NodeHostSpec s = Spec(KeyLine("alice") + "\n" + KeyLine("bob"), workers);
    s.name = std::string(kNode) + "-" + id;
    s.id = id;
    s.data_disks = {{"data", image_, read_only}};
    return s;
  }

  // The loop devices over the image, as `losetup -j` lists them.
  std::string Loops() {
    Result<ProgramResult> r = RunCommand({losetup_, "-j", image_});
    return r.ok() ? r->output : "losetup failed";
  }

  // As alice (who has sudo, like every ssh-keys user), on one worker.
  ProgramResult Run(const WorkerInfo& w, const std::string& cmd) {
    return Ssh("alice", w.address, cmd);
  }

  std::string losetup_;
  std::string image_;
  std::string known_;
};

TEST_F(DataDiskTest, ARootFormatsMountsWritesAndDetaches) {
  std::vector<WorkerInfo> w = BootNode(NodeWithDisk("2001", 1, false));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(Loops(), "");
  ProgramResult r =
      Run(w[0], "stat -c '%n %F %a %U:%G' /dev/sdb; readlink /dev/disk/by-id/google-data");
  EXPECT_EQ(r.output, "/dev/sdb block special file 660 root:disk\n../../sdb\n");
  r = Run(w[0], std::string("set -e; sudo -n mkfs.ext4 -q /dev/sdb; sudo -n mkdir -p ") +
                    kMountDir + "; sudo -n mount -o discard,defaults /dev/sdb " + kMountDir +
                    "; sudo -n chmod a+w " + kMountDir + "; echo written > " + kMountDir +
                    "/file; findmnt -rno SOURCE,FSTYPE,OPTIONS " + kMountDir);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.substr(0, 17), "/dev/sdb ext4 rw,") << r.output;
  EXPECT_NE(r.output.find("nosuid,nodev"), std::string::npos) << r.output;
  // umount, then the type found by probing (no -t), umount by device, -t ext4, and a
  // remount (refused: only fresh mounts are emulated).
  r = Run(w[0], std::string("set -e; sudo -n umount ") + kMountDir + "; ! mountpoint -q " +
                    kMountDir + "; sudo -n mount /dev/disk/by-id/google-data " + kMountDir +
                    "; cat " + kMountDir + "/file; sudo -n umount /dev/sdb; ! mountpoint -q " +
                    kMountDir + "; sudo -n mount -t ext4 /dev/sdb " + kMountDir + "; cat " +
                    kMountDir + "/file; ! sudo -n mount -o remount,ro " + kMountDir +
                    " 2>/dev/null; findmnt -rno OPTIONS " + kMountDir + " | cut -c1-3");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "written\nwritten\nrw,\n");

  // Detach while mounted: the device, its link and the mount go at once.
  ASSERT_TRUE(hosts_->SetDataDisks(std::string(kNode) + "-2001", {}).ok());
  r = Run(w[0],
          std::string("ls /dev/sdb /dev/disk/by-id/google-data 2>&1; mountpoint ") + kMountDir);
  EXPECT_NE(r.output.find("cannot access '/dev/sdb'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("cannot access '/dev/disk/by-id/google-data'"), std::string::npos);
  EXPECT_NE(r.output.find("is not a mountpoint"), std::string::npos) << r.output;
  EXPECT_TRUE(Eventually([&] { return Loops().empty(); })) << Loops();
}

TEST_F(DataDiskTest, AFileWrittenOnOneNodeIsReadOnEveryWorkerOfTwoOthers) {
  std::vector<WorkerInfo> a = BootNode(NodeWithDisk("2101", 1, false));
  ASSERT_EQ(a.size(), 1u);
  ProgramResult r =
      Run(a[0], std::string("set -e; sudo -n mkfs.ext4 -q /dev/sdb; sudo -n mkdir -p ") +
                    kMountDir + "; sudo -n mount /dev/sdb " + kMountDir +
                    "; echo shared | sudo -n tee " + kMountDir + "/file >/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(hosts_->SetDataDisks(std::string(kNode) + "-2101", {}).ok());  // still mounted

  std::vector<WorkerInfo> readers = BootNode(NodeWithDisk("2102", 2, true));
  std::vector<WorkerInfo> c = BootNode(NodeWithDisk("2103", 1, true));
  readers.insert(readers.end(), c.begin(), c.end());
  ASSERT_EQ(readers.size(), 3u);
  for (const WorkerInfo& w : readers) {
    r = Run(w, std::string("set -e; sudo -n mkdir -p ") + kMountDir +
                   "; sudo -n mount -o ro,noload /dev/sdb " + kMountDir + "; cat " + kMountDir +
                   "/file");
    EXPECT_EQ(r.output, "shared\n") << w.hostname;
    // Writes fail through the file system and through the device, even as root.
    r = Run(w,
            std::string("sudo -n touch ") + kMountDir +
                "/new 2>&1 | grep -c 'Read-only file system'; "
                "sudo -n dd if=/dev/zero of=/dev/sdb count=1 status=none 2>/dev/null; echo dd=$?; "
                "sudo -n blockdev --setrw /dev/sdb 2>/dev/null; echo setrw=$?; "
                "sudo -n dd if=/dev/zero of=/dev/sdb count=1 status=none 2>/dev/null; echo dd=$?");
    EXPECT_EQ(r.output, "1\ndd=1\nsetrw=1\ndd=1\n") << w.hostname;
  }
  // Without `ro` the helper mounts read-only anyway, and says so as mount(8) does.
  r = Run(readers[0],
          std::string("sudo -n mkdir -p /mnt/two && sudo -n mount /dev/sdb /mnt/two 2>&1 && "
                      "findmnt -rno OPTIONS /mnt/two"));
  EXPECT_NE(r.output.find("write-protected, mounted read-only"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.substr(r.output.rfind('\n', r.output.size() - 2) + 1, 3), "ro,") << r.output;
}

TEST_F(DataDiskTest, NothingElseBecomesMountable) {
  std::vector<WorkerInfo> w = BootNode(NodeWithDisk("2201", 1, false));
  ASSERT_EQ(w.size(), 1u);
  ASSERT_EQ(Run(w[0], "sudo -n mkfs.ext4 -q /dev/sdb && sudo -n mkdir -p /mnt/d /run/d").exit_code,
            0);
  // A user without root can neither read the device nor mount it.
  ProgramResult r =
      Ssh("bob", w[0].address,
          "head -c1 /dev/sdb 2>&1; echo x 2>&1 >/dev/sdb; mount /dev/sdb /mnt/d 2>&1; "
          "/usr/sbin/mount.ext4 /dev/sdb /tmp 2>&1; mountpoint -q /mnt/d || echo not-mounted");
  EXPECT_EQ(r.output,
            "head: cannot open '/dev/sdb' for reading: Permission denied\n"
            "bash: line 1: /dev/sdb: Permission denied\n"
            "mount: /mnt/d: must be superuser to use mount.\n"
            "mount: /tmp: must be superuser to use mount.\n"
            "not-mounted\n");
  // Root: no tmpfs, no bind of /, nowhere but its own places, no other options, no
  // device nodes, no unmounting the machine's mounts.
  for (const char* cmd :
       {"sudo -n mount -t tmpfs none /mnt/d", "sudo -n mount --bind / /mnt/d",
        "sudo -n mount /dev/sdb /run/d", "sudo -n mount -o journal_dev=2049 /dev/sdb /mnt/d",
        "sudo -n mount -o errors=panic /dev/sdb /mnt/d",
        "sudo -n /usr/sbin/mount.ext4 /dev/null /mnt/d", "sudo -n mknod /tmp/b b 7 0",
        "sudo -n umount /home", "sudo -n umount /etc"}) {
    r = Run(w[0], cmd);
    EXPECT_NE(r.exit_code, 0) << cmd << ": " << r.output;
  }
  r = Run(w[0],
          "mountpoint -q /home && mountpoint -q /mnt/d || echo unchanged; "
          "findmnt -rno TARGET | grep -c '^/mnt/d$\\|^/run/d$' || true");
  EXPECT_EQ(r.output, "unchanged\n0\n");
  // …while the disk itself still mounts.
  EXPECT_EQ(Run(w[0], "sudo -n mount /dev/sdb /mnt/d && sudo -n umount /mnt/d").exit_code, 0);
}

// A fleet spec's `data_disks: [{source: …, mount: /data}]`: the node agent makes the
// directory in "/" and mounts there (worker_root.h), on every worker of every node.
TEST_F(DataDiskTest, AReadOnlyDiskAtSlashDataShowsTheSameFilesOnEveryWorkerOfTwoNodes) {
  std::error_code ec;
  if (fs::exists("/data", ec)) {
    GTEST_SKIP() << "the machine has a /data, which every worker would show instead";
  }
  std::vector<WorkerInfo> a = BootNode(NodeWithDisk("2601", 1, false));
  ASSERT_EQ(a.size(), 1u);
  ProgramResult r = Run(a[0],
                        "set -e; sudo -n mkfs.ext4 -q /dev/sdb; sudo -n mkdir /data; "
                        "sudo -n mount /dev/sdb /data; echo shared | sudo -n tee /data/file "
                        ">/dev/null; sudo -n umount /data");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<WorkerInfo> readers = BootNode(NodeWithDisk("2602", 2, true));
  std::vector<WorkerInfo> c = BootNode(NodeWithDisk("2603", 1, true));
  readers.insert(readers.end(), c.begin(), c.end());
  ASSERT_EQ(readers.size(), 3u);
  for (const WorkerInfo& w : readers) {
    r = Run(w,
            "set -e; sudo -n mkdir -p /data; sudo -n mount -o ro,noload /dev/sdb /data; "
            "cat /data/file; findmnt -rno SOURCE,OPTIONS /data | cut -c1-12; sudo -n umount "
            "/data; mountpoint -q /data || echo unmounted");
    EXPECT_EQ(r.output, "shared\n/dev/sdb ro,\nunmounted\n") << w.hostname;
  }
  // Still nowhere else: not over "/", /proc, /run, /etc, nor through a link from "/"
  // into the worker's /etc or the machine's /sys.
  for (const char* cmd :
       {"sudo -n mount /dev/sdb /", "sudo -n mount /dev/sdb /proc", "sudo -n mount /dev/sdb /run",
        "sudo -n mount /dev/sdb /etc",
        "sudo -n ln -s /etc/ssh /to-etc && sudo -n mount /dev/sdb /to-etc",
        "sudo -n ln -s /sys/kernel /to-sys && sudo -n mount /dev/sdb /to-sys"}) {
    r = Run(readers[0], cmd);
    EXPECT_NE(r.exit_code, 0) << cmd << ": " << r.output;
  }
  EXPECT_EQ(Run(readers[0], "findmnt -rn -S /dev/sdb | wc -l").output, "0\n");
}

TEST_F(DataDiskTest, DisksStayAcrossHaltAndBootAndGoWithDestroy) {
  NodeHostSpec spec = NodeWithDisk("2301", 2, true);
  ASSERT_EQ(BootNode(spec).size(), 2u);
  EXPECT_NE(Loops(), "");
  ASSERT_TRUE(hosts_->Halt(spec.name).ok());
  EXPECT_TRUE(Eventually([&] { return Loops().empty(); })) << Loops();
  known_.clear();
  std::vector<WorkerInfo> w = BootNode(spec);
  ASSERT_EQ(w.size(), 2u);
  for (const WorkerInfo& i : w) {
    EXPECT_EQ(Run(i, "stat -c %F /dev/sdb").output, "block special file\n") << i.hostname;
  }
  // Attach a second disk while it runs: sdc on every worker.
  std::string second = root_ + "/second.img";
  ASSERT_TRUE(WriteFileAtomic(second, "", 0600).ok());
  ASSERT_EQ(::truncate(second.c_str(), 16 << 20), 0);
  spec.data_disks.push_back({"second", second, false});
  ASSERT_TRUE(hosts_->SetDataDisks(spec.name, spec.data_disks).ok());
  for (const WorkerInfo& i : w) {
    EXPECT_EQ(Run(i, "readlink /dev/disk/by-id/google-second /dev/disk/by-id/google-data").output,
              "../../sdc\n../../sdb\n")
        << i.hostname;
  }
  ASSERT_TRUE(hosts_->Destroy(spec.name).ok());
  EXPECT_TRUE(Eventually([&] { return Loops().empty(); })) << Loops();
  EXPECT_TRUE(Eventually([&] {
    Result<ProgramResult> r = RunCommand({losetup_, "-j", second});
    return r.ok() && r->output.empty();
  }));
}

TEST_F(DataDiskTest, ABusyMountStaysAndEmulatorStopFreesTheLoopAnyway) {
  std::vector<WorkerInfo> w = BootNode(NodeWithDisk("2401", 1, false));
  ASSERT_EQ(w.size(), 1u);
  ProgramResult r =
      Run(w[0], std::string("set -e; sudo -n mkfs.ext4 -q /dev/sdb; sudo -n mkdir -p ") +
                    kMountDir + "; sudo -n mount /dev/sdb " + kMountDir + "; sudo -n sh -c 'cd " +
                    kMountDir + " && exec sleep 600' </dev/null >/dev/null 2>&1 &");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = Run(w[0],
          std::string("sleep 0.2; sudo -n umount ") + kMountDir + " 2>&1; mountpoint " + kMountDir);
  EXPECT_NE(r.output.find("target is busy"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("is a mountpoint"), std::string::npos) << r.output;
  EXPECT_NE(Loops(), "");
  hosts_->Shutdown();  // what `emulator stop` does
  EXPECT_TRUE(Eventually([&] { return Loops().empty(); })) << Loops();
}

TEST_F(DataDiskTest, ASigkilledEmulatorLeavesNoLoopDevice) {
  hosts_.reset();
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // an emulator: boots a node with a mounted disk, then waits to die
    ::close(report[0]);
    RealClock clock;
    NamespaceHostsOptions o;
    o.state_dir = root_ + "/killed";
    o.worker_binary = TPUFLEET_EMULATOR_WORKER;
    Result<std::unique_ptr<NamespaceHosts>> h = NamespaceHosts::Create(o, clock);
    NodeHostSpec spec = NodeWithDisk("2501", 1, false);
    Result<std::vector<WorkerInfo>> w = h.ok() ? (*h)->Boot(spec, false) : h.status();
    std::string out = w.ok() ? "up " + (*w)[0].address + " " + (*w)[0].host_key + "\n"
                             : w.status().ToString() + "\n";
    [[maybe_unused]] ssize_t n = ::write(report[1], out.data(), out.size());
    while (true) {
      ::pause();
    }
  }
  ::close(report[1]);
  std::string line;  // one line: the child keeps the pipe open
  for (char c; line.size() < 4096 && ::read(report[0], &c, 1) == 1 && c != '\n';) {
    line += c;
  }
  ::close(report[0]);
  ASSERT_TRUE(StartsWith(line, "up ")) << line;
  std::vector<std::string> f = Split(Trim(line), ' ');
  ASSERT_EQ(f.size(), 4u) << line;
  ASSERT_TRUE(WriteFileAtomic(root_ + "/known_hosts", f[1] + " " + f[2] + " " + f[3] + "\n").ok());
  WorkerInfo w{f[1], "", f[2] + " " + f[3]};
  ProgramResult r = Run(w, std::string("set -e; sudo -n mkfs.ext4 -q /dev/sdb; sudo -n mkdir -p ") +
                               kMountDir + "; sudo -n mount /dev/sdb " + kMountDir);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(Loops(), "");
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_TRUE(Eventually([&] { return Loops().empty(); })) << Loops();
  EXPECT_TRUE(NamespaceHosts::CleanStale(root_ + "/killed").ok());
}

}  // namespace
}  // namespace tpufleet::emulator::hosts_test
