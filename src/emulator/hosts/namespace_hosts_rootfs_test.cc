// System tests of a worker's root directory of its own (worker_root.h, issue 15): its
// root makes top-level directories as on a VM, they stay on its disk, and nobody else
// sees them. Real sshd; root only (namespace_hosts_fixture.h). Mounting a data disk
// there is in namespace_hosts_disks_test.cc.
#include "emulator/hosts/namespace_hosts_fixture.h"

namespace tpufleet::emulator::hosts_test {
namespace {

using WorkerRootDirTest = NamespaceHostsTest;

TEST_F(WorkerRootDirTest, RootMakesTopLevelDirectoriesThatStayOnItsDisk) {
  const std::string name = "/tpufleet-root-dir-test-" + std::to_string(::getpid());
  NodeHostSpec spec = Spec(KeyLine("alice") + "\n" + KeyLine("bob"), 2);
  std::vector<WorkerInfo> w = BootOrDie(spec);
  ASSERT_EQ(w.size(), 2u);
  std::error_code ec;
  // As on a VM: "/" is root's, 0755 like the machine's; the machine's entries are there.
  struct stat machine_root;
  ASSERT_EQ(::stat("/", &machine_root), 0);
  char mode[8];
  std::snprintf(mode, sizeof mode, "%o", machine_root.st_mode & 07777);
  ProgramResult r = Ssh("alice", w[0].address,
                        "set -e; stat -c '%a %U' /; readlink /bin; sudo -n mkdir " + name +
                            " /scratch; echo kept | sudo -n tee " + name + "/file >/dev/null; "
                            "sudo -n touch /workspace-file; cat " + name + "/file");
  EXPECT_EQ(r.output, std::string(mode) + " root\nusr/bin\nkept\n") << r.output;
  // The machine's root is gone from the worker: the classic chroot escape (the worker
  // keeps CAP_SYS_CHROOT) ends in the worker's own root, and nothing is left in "/".
  if (fs::exists("/usr/bin/perl", ec)) {
    r = Ssh("alice", w[0].address,
            "cd /tmp && sudo -n perl -e 'mkdir \"jail\"; chroot \"jail\" or die; "
            "chdir \"..\" for 1..64; chroot \".\" or die; exec \"/bin/ls\", \"-d\", \"" +
                name + "\"'; ls -a / | grep -c tpufleet-machine");
    EXPECT_EQ(r.output, name + "\n0\n") << r.output;
  }
  // Another user cannot; the machine and the other worker see none of it.
  r = Ssh("bob", w[0].address, "mkdir /bob 2>&1; touch /bob-file 2>&1; echo $?");
  EXPECT_EQ(r.output,
            "mkdir: cannot create directory '/bob': Permission denied\n"
            "touch: cannot touch '/bob-file': Permission denied\n1\n");
  EXPECT_EQ(Ssh("alice", w[1].address, "ls -d " + name + " /scratch 2>/dev/null; echo $?").output,
            "2\n");
  EXPECT_FALSE(fs::exists(name, ec));
  EXPECT_FALSE(fs::exists("/workspace-file", ec));

  // A stop and start keeps it, and puts back a machine link the worker's root replaced.
  const bool sbin_link = fs::is_symlink("/sbin", ec);
  const std::string sbin = sbin_link ? fs::read_symlink("/sbin", ec).string() : "";
  if (sbin_link) {
    ASSERT_EQ(Ssh("alice", w[0].address, "sudo -n rm /sbin && sudo -n mkdir /sbin").exit_code, 0);
  }
  ASSERT_TRUE(hosts_->Halt(spec.name).ok());
  w = BootOrDie(spec);
  ASSERT_EQ(w.size(), 2u);
  r = Ssh("alice", w[0].address, "cat " + name + "/file; ls -d /scratch; readlink /sbin");
  EXPECT_EQ(r.output, "kept\n/scratch\n" + (sbin_link ? sbin + "\n" : "")) << r.output;

  // Delete takes it with the disk.
  ASSERT_TRUE(hosts_->Destroy(spec.name).ok());
  w = BootOrDie(spec);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(Ssh("alice", w[0].address, "ls -d " + name + " 2>/dev/null; echo $?").output, "2\n");
}

}  // namespace
}  // namespace tpufleet::emulator::hosts_test
