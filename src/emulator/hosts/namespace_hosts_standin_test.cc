// System tests of the stand-in for a JAX program (tpu-standin) on real workers (issue
// 12): libtpu's lock and its refusal, a crash's unlocked lockfile, an orphaned holder,
// checkpoints. Run over real ssh as a user of the worker, as a job would run it.
#include "emulator/hosts/namespace_hosts_fixture.h"

namespace tpufleet::emulator::hosts_test {
namespace {

// Whether /proc/locks has a lock on /tmp/libtpu_lockfile's inode ("present locked",
// "present unlocked" or "absent"), as a shell line on the worker.
constexpr const char* kLockState =
    "if test -e /tmp/libtpu_lockfile; then i=$(stat -c %i /tmp/libtpu_lockfile); "
    "if grep -q \":$i \" /proc/locks; then echo present locked; else echo present unlocked; fi; "
    "else echo absent; fi";

// A build tree under /tmp (a checkout there, as CI's may be): the worker mounts its own
// /tmp over the machine's, and still has the stand-in.
TEST_F(NamespaceHostsTest, TheStandinIsThereWhenItsBuildIsUnderTmp) {
  hosts_.reset();
  const std::string copy = root_ + "/build/tpu-standin";  // root_ is under /tmp
  ASSERT_TRUE(hosts::RunChecked({"/usr/bin/install", "-D", "-m", "0755", TPUFLEET_TPU_STANDIN, copy})
                  .ok());
  MakeHosts(copy);
  WorkerInfo w = BootOne("v4-8", "v4", 4);
  ProgramResult r = Ssh("alice", w.address, "tpu-standin --help | head -1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("usage: tpu-standin", 0), 0u) << r.output;
}

TEST_F(NamespaceHostsTest, TheStandinTakesTheLockAndASecondIsRefusedInLibtpusWords) {
  WorkerInfo w = BootOne("v4-8", "v4", 4);
  ProgramResult r = Ssh(
      "alice", w.address,
      std::string("TPU_WORKER_ID=0 TPUFLEET_RANK=0 tpu-standin --idle --step-ms 50 >/tmp/first.log "
                  "2>&1 & first=$!; sleep 1; echo first=$first; ") +
          kLockState +
          "; echo links=$(ls -l /proc/$first/fd | grep -c ' /dev/accel'); "
          "tpu-standin --steps 1 2>&1; echo rc=$?; head -1 /tmp/first.log; "
          "kill $first; wait $first; echo first_rc=$?; " + kLockState);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string first = r.output.substr(r.output.find("first=") + 6);
  first = first.substr(0, first.find('\n'));
  EXPECT_NE(r.output.find("present locked\nlinks=4\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("The TPU is already in use by process with pid " + first +
                          ". Not attempting to load libtpu.so in this process.\nrc=1\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("tpu-standin: pid " + first + " TPU_WORKER_ID=0 TPUFLEET_RANK=0\n"),
            std::string::npos)
      << r.output;
  // SIGTERM is a clean end: libtpu's atexit removes the file.
  EXPECT_NE(r.output.find("first_rc=143\nabsent\n"), std::string::npos) << r.output;
}

TEST_F(NamespaceHostsTest, AStandinThatCrashesLeavesAnUnlockedLockfile) {
  WorkerInfo w = BootOne("v4-8", "v4", 4);
  ProgramResult r = Ssh("alice", w.address,
                        // (the inner shell's "Killed" notice goes to /dev/null)
                        std::string("bash -c 'tpu-standin --crash-after 0.3 >/dev/null; "
                                    "echo rc=$?' 2>/dev/null; ") +
                            kLockState + "; tpu-standin --steps 2 --step-ms 10 | tail -1");
  EXPECT_EQ(r.output, "rc=137\npresent unlocked\ntpu-standin: done\n");
}

TEST_F(NamespaceHostsTest, AnOrphanKeepsAVfioDeviceThatASecondOpenCannotHave) {
  WorkerInfo w = BootOne("v5litepod-4", "v5litepod", 4);
  ProgramResult r = Ssh("alice", w.address,
                        std::string("tpu-standin --orphan >/dev/null 2>&1; echo rc=$?; ") +
                            kLockState +
                            "; for p in /proc/[0-9]*; do "
                            "ls -l $p/fd 2>/dev/null | grep -q ' /dev/vfio/0$' && "
                            "echo holder $(cat $p/comm) sid=$(ps -o sid= -p ${p#/proc/}); done; "
                            "ALLOW_MULTIPLE_LIBTPU_LOAD=1 tpu-standin --steps 1 2>&1 | tail -1");
  EXPECT_NE(r.output.find("rc=1\npresent unlocked\nholder tpu-standin sid="), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("TPU initialization failed: open(/dev/vfio/0): Device or resource busy"),
            std::string::npos)
      << r.output;
}

TEST_F(NamespaceHostsTest, TheStandinResumesFromItsLastCheckpoint) {
  WorkerInfo w = BootOne("v4-8", "v4", 4);
  ProgramResult r = Ssh("alice", w.address,
                        "tpu-standin --steps 4 --checkpoint-every 2 --checkpoint-dir ~/ck "
                        "--step-ms 10 >/dev/null; ls ~/ck | tr '\\n' ' '; echo; "
                        "tpu-standin --steps 5 --checkpoint-every 2 --checkpoint-dir ~/ck "
                        "--step-ms 10 | grep -v '^tpu-standin' | sed 's/ loss=.*//'");
  EXPECT_EQ(r.output, "step_2 step_4 \nrestarts 0\nresumed from step 4\nstep 5/5 rank=0\n")
      << r.output;
}

TEST_F(NamespaceHostsTest, WithoutChipsTheStandinSaysWhatLibtpuSays) {
  WorkerInfo w = BootOne("cpu-1", "", 0);
  ProgramResult r = Ssh("alice", w.address, "tpu-standin 2>&1 | tail -1; echo rc=${PIPESTATUS[0]}");
  EXPECT_EQ(r.output, "TPU initialization failed: No ba16c7433 device found.\nrc=1\n");
}

}  // namespace
}  // namespace tpufleet::emulator::hosts_test
