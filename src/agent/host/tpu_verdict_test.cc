#include "agent/host/tpu_verdict.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "agent/host/testing/fake_host.h"

namespace tpufleet::agent::host {
namespace {

using testing::FakeHost;

ProcessInfo Proc(pid_t pid, const char* user, const char* command) {
  return {pid, 1001, user, command, 1};
}

TEST(DecideTpu, EachCase) {
  const ProcessInfo train = Proc(4242, "alice", "python3 train.py");
  const ProcessInfo child = Proc(4243, "alice", "python3 -c worker");
  const ProcessInfo nb = Proc(77, "bob", "jupyter kernel");
  struct Row {
    const char* name;
    TpuFacts facts;
    LiveJobPids live;
    TpuVerdictKind kind;
    std::string job;
    std::vector<pid_t> pids;
    std::string message;
  };
  const std::vector<Row> rows = {
      {"nothing there", {}, {}, TpuVerdictKind::kFree, "", {}, ""},
      {"lockfile left by a dead process", {{}, {}, {true, 9, {}}}, {},
       TpuVerdictKind::kStaleLockfile, "", {}, ""},
      {"lock held by a job", {{}, {}, {true, 9, {train}}}, {{4242, "jabc1234"}},
       TpuVerdictKind::kHeldByJob, "jabc1234", {4242},
       "the TPU is in use by job jabc1234: pid 4242 (alice): python3 train.py"},
      {"device held by a job's child, lock by the job", {{}, {{"/dev/accel0", child}}, {true, 9, {train}}},
       {{4242, "jabc1234"}, {4243, "jabc1234"}}, TpuVerdictKind::kHeldByJob, "jabc1234",
       {4242, 4243}, ""},
      {"device held with no lockfile at all (ALLOW_MULTIPLE_LIBTPU_LOAD)",
       {{}, {{"/dev/vfio/0", train}, {"/dev/vfio/1", train}}, {}}, {{4242, "j1"}},
       TpuVerdictKind::kHeldByJob, "j1", {4242}, ""},
      {"orphan holding lock and device", {{}, {{"/dev/accel0", train}}, {true, 9, {train}}}, {},
       TpuVerdictKind::kOrphan, "", {4242},
       "the TPU is held by pid 4242 (alice): python3 train.py, a process of no tpufleet job; "
       "stop it, or start the job with --kill-stale to have the agent kill it"},
      {"orphan device holder, no lockfile", {{}, {{"/dev/accel1", nb}}, {}}, {{4242, "j1"}},
       TpuVerdictKind::kOrphan, "", {77}, ""},
      {"a job and an orphan: the job first", {{}, {{"/dev/accel1", nb}}, {true, 9, {train}}},
       {{4242, "j1"}}, TpuVerdictKind::kHeldByJob, "j1", {4242}, ""},
      {"a lock whose owner cannot be named", {{}, {}, {true, 9, {ProcessInfo{-1, 0, "", "", 0}}}},
       {{-1, "j1"}}, TpuVerdictKind::kOrphan, "", {-1}, ""},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    TpuVerdict v = DecideTpu(r.facts, r.live);
    EXPECT_EQ(v.kind, r.kind);
    EXPECT_EQ(v.job, r.job);
    std::vector<pid_t> pids;
    for (const TpuClaimant& c : v.claimants) {
      pids.push_back(c.process.pid);
    }
    EXPECT_EQ(pids, r.pids);
    if (!r.message.empty()) {
      EXPECT_EQ(v.message, r.message);
    }
    EXPECT_TRUE(v.log_lines.empty());
  }
}

TEST(DecideTpu, ClaimantsSayWhatTheyHold) {
  const ProcessInfo train = Proc(4242, "alice", "python3 train.py");
  TpuVerdict v = DecideTpu({{}, {{"/dev/accel0", train}, {"/dev/accel1", train}}, {true, 9, {train}}}, {});
  ASSERT_EQ(v.claimants.size(), 1u);
  EXPECT_EQ(v.claimants[0].holds,
            (std::vector<std::string>{kLibtpuLockfile, "/dev/accel0", "/dev/accel1"}));
}

TEST(ClaimTpu, RemovesAStaleLockfileAndSaysSo) {
  FakeHost host;
  host.AddPci("0000:00:05.0", "0x005e");
  host.AddLockfile();
  Result<TpuVerdict> v = ClaimTpu(host.paths(), {});
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->kind, TpuVerdictKind::kStaleLockfile);
  EXPECT_EQ(v->log_lines, std::vector<std::string>{
                              "tpufleet: removed a stale /tmp/libtpu_lockfile (no process held "
                              "a lock on it or a TPU device)"});
  EXPECT_NE(::access(host.paths().lockfile.c_str(), F_OK), 0);
  EXPECT_EQ(ClaimTpu(host.paths(), {})->kind, TpuVerdictKind::kFree);
}

TEST(ClaimTpu, NeverRemovesALockfileWithAVisibleLocker) {
  FakeHost host;
  host.AddProcess(4242, 1001, {"python3", "train.py"});
  host.LockedBy(4242, host.AddLockfile());
  EXPECT_EQ(ClaimTpu(host.paths(), {})->kind, TpuVerdictKind::kOrphan);
  EXPECT_EQ(ClaimTpu(host.paths(), {{4242, "j1"}})->kind, TpuVerdictKind::kHeldByJob);
  EXPECT_EQ(::access(host.paths().lockfile.c_str(), F_OK), 0);
}

TEST(ClaimTpu, ASymlinkIsNotRemoved) {
  FakeHost host;
  host.dir().Write("victim", "keep");
  ASSERT_EQ(::symlink(host.dir().Path("victim").c_str(), host.paths().lockfile.c_str()), 0);
  Result<TpuVerdict> v = ClaimTpu(host.paths(), {});
  EXPECT_EQ(v.status().code(), StatusCode::kInternal);
  struct stat st;
  EXPECT_EQ(::lstat(host.paths().lockfile.c_str(), &st), 0);
  EXPECT_EQ(::access(host.dir().Path("victim").c_str(), F_OK), 0);
}

// A real process that holds libtpu's lock (lockf) on a temp lockfile and has a temp
// "device" open, as a JAX program on a v4 host does; killed and reaped at the end.
class RealHolder : public ::testing::Test {
 protected:
  void SetUp() override {
    paths_.proc = "/proc";  // the real process's fds and locks
    host_.AddPci("0000:00:05.0", "0x005e");
    host_.AddNode("accel0");
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const std::string lockfile = paths_.lockfile;
    const std::string device = paths_.dev + "/accel0";
    pid_ = ::fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      ::close(ready[0]);
      int lock = ::open(lockfile.c_str(), O_CREAT | O_RDWR, 0600);
      int dev = ::open(device.c_str(), O_RDWR);
      if (lock < 0 || dev < 0 || ::lockf(lock, F_TLOCK, 0) != 0) {
        ::_exit(2);
      }
      (void)!::write(ready[1], "x", 1);
      while (true) {
        ::pause();
      }
    }
    ::close(ready[1]);
    char c = 0;
    ASSERT_EQ(::read(ready[0], &c, 1), 1) << "the holder could not take the lock";
    ::close(ready[0]);
  }
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  bool LockfileThere() const { return ::access(paths_.lockfile.c_str(), F_OK) == 0; }

  FakeHost host_;
  HostPaths paths_ = host_.paths();
  pid_t pid_ = -1;
};

TEST_F(RealHolder, IsSeenOnTheDeviceAndTheLock) {
  TpuFacts f = ScanTpu(paths_);
  ASSERT_EQ(f.holders.size(), 1u);
  EXPECT_EQ(f.holders[0].process.pid, pid_);
  EXPECT_EQ(f.holders[0].device, paths_.dev + "/accel0");
  EXPECT_NE(f.holders[0].process.command.find("agent_host_test"), std::string::npos);
  ASSERT_TRUE(f.lockfile.present);
  ASSERT_EQ(f.lockfile.lockers.size(), 1u);
  EXPECT_EQ(f.lockfile.lockers[0].pid, pid_);
  EXPECT_NE(f.lockfile.lockers[0].start_ticks, 0u);
}

TEST_F(RealHolder, IsNeverRemovedWhetherItsJobLivesOrNot) {
  Result<TpuVerdict> orphan = ClaimTpu(paths_, {});
  ASSERT_TRUE(orphan.ok());
  EXPECT_EQ(orphan->kind, TpuVerdictKind::kOrphan);
  EXPECT_NE(orphan->message.find("pid " + std::to_string(pid_) + " ("), std::string::npos);
  Result<TpuVerdict> held = ClaimTpu(paths_, {{pid_, "jbusy000"}});
  EXPECT_EQ(held->kind, TpuVerdictKind::kHeldByJob);
  EXPECT_EQ(held->job, "jbusy000");
  EXPECT_TRUE(LockfileThere());
  EXPECT_EQ(::kill(pid_, 0), 0) << "the holder was killed without kill_stale";
}

TEST_F(RealHolder, IsNotRemovedWhenProcHidesTheLock) {
  // /proc says nobody holds anything (a fake /proc), yet the real lock stays respected.
  Result<TpuVerdict> v = ClaimTpu(host_.paths(), {});
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->kind, TpuVerdictKind::kOrphan);
  EXPECT_NE(v->message.find("cannot see"), std::string::npos);
  EXPECT_TRUE(LockfileThere());
}

TEST_F(RealHolder, KillStaleKillsItThenRemovesTheLockfile) {
  Result<TpuVerdict> v = ClaimTpu(paths_, {}, {.kill_stale = true});
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->kind, TpuVerdictKind::kStaleLockfile);
  ASSERT_EQ(v->log_lines.size(), 2u);
  EXPECT_EQ(v->log_lines[0].rfind("tpufleet: killed pid " + std::to_string(pid_) + " (", 0), 0u)
      << v->log_lines[0];
  EXPECT_NE(v->log_lines[0].find("(SIGTERM)"), std::string::npos);
  EXPECT_EQ(v->log_lines[1], StaleLockfileLine());
  EXPECT_FALSE(LockfileThere());
  int status = 0;
  ASSERT_EQ(::waitpid(pid_, &status, 0), pid_);
  pid_ = -1;
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
}

TEST_F(RealHolder, KillStaleEscalatesToSigkill) {
  ::kill(pid_, SIGSTOP);  // a stopped process does not act on SIGTERM
  Result<TpuVerdict> v =
      ClaimTpu(paths_, {}, {.kill_stale = true, .term_grace = std::chrono::milliseconds(200)});
  ASSERT_TRUE(v.ok());
  ASSERT_FALSE(v->log_lines.empty());
  EXPECT_NE(v->log_lines[0].find("(SIGKILL 0s after SIGTERM)"), std::string::npos)
      << v->log_lines[0];
  EXPECT_FALSE(LockfileThere());
}

TEST_F(RealHolder, KillStaleSparesLiveJobs) {
  Result<TpuVerdict> v = ClaimTpu(paths_, {{pid_, "jbusy000"}}, {.kill_stale = true});
  EXPECT_EQ(v->kind, TpuVerdictKind::kHeldByJob);
  EXPECT_TRUE(v->log_lines.empty());
  EXPECT_EQ(::kill(pid_, 0), 0);
  EXPECT_TRUE(LockfileThere());
}

}  // namespace
}  // namespace tpufleet::agent::host
