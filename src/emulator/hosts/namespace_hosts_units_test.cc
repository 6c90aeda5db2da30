// System tests of the worker's minimal service manager (boot_units.h) on a real worker
// (issue 12): a unit enabled under multi-user.target.wants runs at every boot, as root,
// and is restarted when it exits.
#include "emulator/hosts/namespace_hosts_fixture.h"

namespace tpufleet::emulator::hosts_test {
namespace {

// The pid of the worker's root `sleep 4242`, or "" (as alice sees it).
constexpr const char* kUnitPid =
    "ps -C sleep -o user=,pid=,args= | awk '$4 == \"4242\" {print $1, $2}'";

TEST_F(NamespaceHostsTest, AnEnabledUnitRunsAtEveryBootAndComesBackWhenItExits) {
  WorkerInfo w = BootOne("v4-8", "v4", 4);
  ProgramResult r = Ssh(
      "alice", w.address,
      "test -e /run/systemd/system && echo systemd; "
      "printf '[Unit]\\nDescription=demo\\n[Service]\\nExecStart=/bin/sleep 4242\\n"
      "Restart=always\\n[Install]\\nWantedBy=multi-user.target\\n' | "
      "sudo -n tee /etc/systemd/system/demo.service >/dev/null && "
      "sudo -n mkdir -p /etc/systemd/system/multi-user.target.wants && "
      "sudo -n ln -s /etc/systemd/system/demo.service "
      "/etc/systemd/system/multi-user.target.wants/demo.service && echo enabled; " +
          std::string(kUnitPid));
  EXPECT_EQ(r.output, "enabled\n") << r.output;  // no systemd; nothing runs before a boot

  ASSERT_TRUE(hosts_->Halt(kNode).ok());
  w = BootOne("v4-8", "v4", 4);
  r = Ssh("alice", w.address, kUnitPid);
  ASSERT_EQ(r.output.substr(0, 5), "root ") << r.output;
  std::string first = std::string(Trim(r.output.substr(5)));

  // Killed, it is back after its backoff with a new pid.
  ASSERT_EQ(Ssh("alice", w.address, "sudo -n kill " + first).exit_code, 0);
  std::string again;
  EXPECT_TRUE(Eventually([&] {
    again = Ssh("alice", w.address, kUnitPid).output;
    return StartsWith(again, "root ") && std::string(Trim(again.substr(5))) != first;
  })) << again;
}

}  // namespace
}  // namespace tpufleet::emulator::hosts_test
