// PlanExec over a TestWorld (what job the fan-out gets), and StoppableCommand run by a
// real local `sh`: the words come back exactly, the exit status is the command's, and
// closing the wrapper's stdin (what a closed SSH channel does) kills the command's
// whole process group. The same through a real sshd and the emulator's workers:
// test/exec_e2e_test.sh.
#include "control/exec.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "control/testing/test_world.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/subprocess.h"
#include "util/unique_fd.h"

namespace tpufleet {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::Contains;
using testing::kAliceKey;
using testing::kBobKey;
using testing::kProject;
using testing::TestWorld;

// ---------------------------------------------------------------------------------------
// PlanExec

// Fleet "lab": pod (4 workers, login "tester" from up, port 0), box (ssh-hosts, login
// "me", port 2222, no pinned key) and eval (1 worker, no login recorded, port 2200).
class PlanExecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Put("pod", 4, "tester");
    NodeRecord& eval = Put("eval", 1, "");
    eval.port = 2200;
    eval.workers[0].host_key = kBobKey;
    NodeRecord& box = Put("box", 1, "me");
    box.provider = "ssh-hosts";
    box.port = 2222;
    box.workers[0].host_key = "";
    for (const NodeRecord& r : records_) {
      ASSERT_EQ(t_.store->PutNode(r), Status::Ok());
    }
  }

  NodeRecord& Put(const std::string& name, int workers, const std::string& login) {
    NodeRecord r;
    r.fleet = "lab";
    r.name = name;
    r.provider = "gcp-tpu";
    r.project = kProject;
    r.state = NodeState::kReady;
    r.login = login;
    for (int i = 0; i < workers; ++i) {
      r.workers.push_back(
          {i, "198.18." + std::to_string(records_.size()) + "." + std::to_string(i + 2),
           name + "-host-" + std::to_string(i), kAliceKey, true, ""});
    }
    records_.push_back(std::move(r));
    return records_.back();
  }

  Result<ExecPlan> Plan(std::vector<std::string> targets,
                        std::vector<std::string> argv = {"hostname"}) {
    ExecRequest request;
    request.targets = std::move(targets);
    request.argv = std::move(argv);
    return PlanExec(t_.world, request);
  }

  TestWorld t_;
  std::vector<NodeRecord> records_;
};

TEST_F(PlanExecTest, HostsCarryAddressPortLoginPinnedKeyAndTheFleetKey) {
  Result<ExecPlan> plan = Plan({"pod:1-2", "eval"});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();

  const FanoutJob& job = plan->job;
  EXPECT_EQ(job.key_path, t_.dir.path() + "/state/ssh/id_ed25519");
  ASSERT_EQ(job.hosts.size(), 3u);
  ASSERT_EQ(plan->workers.size(), 3u);
  // Ordered by node name within the fleet: eval, then pod.
  EXPECT_EQ(job.hosts[0].name, "eval/w0");
  EXPECT_EQ(job.hosts[0].address, "198.18.1.2");
  EXPECT_EQ(job.hosts[0].port, 2200);
  EXPECT_EQ(job.hosts[0].user, "tester");  // no login recorded: the world's
  EXPECT_EQ(job.hosts[0].host_key, kBobKey);
  for (size_t i : {1u, 2u}) {
    int w = static_cast<int>(i);
    EXPECT_EQ(job.hosts[i].name, "pod/w" + std::to_string(w));
    EXPECT_EQ(job.hosts[i].address, "198.18.0." + std::to_string(w + 2));
    EXPECT_EQ(job.hosts[i].port, 22);  // port 0 in the record
    EXPECT_EQ(job.hosts[i].user, "tester");
    EXPECT_EQ(job.hosts[i].host_key, kAliceKey);
    EXPECT_EQ(plan->workers[i].name, job.hosts[i].name);
  }
}

TEST_F(PlanExecTest, TheRecordsLoginWinsOverTheWorlds) {
  NodeRecord r = t_.Record("pod");
  r.login = "alice";
  ASSERT_EQ(t_.store->PutNode(r), Status::Ok());
  Result<ExecPlan> plan = Plan({"pod:0"});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->job.hosts.size(), 1u);
  EXPECT_EQ(plan->job.hosts[0].user, "alice");
}

TEST_F(PlanExecTest, TheCommandIsTheStoppableWrapperHoldingStdin) {
  std::vector<std::string> argv = {"printf", "%s\n", "a b", "$HOME", "x;y", "it's"};
  Result<ExecPlan> plan = Plan({"pod"}, argv);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->job.command, StoppableCommand(argv));
  // The words are in it quoted once, inside the wrapper's own quoting.
  EXPECT_TRUE(Contains(plan->job.command, ShellQuote(ShellJoin(argv)))) << plan->job.command;
  EXPECT_TRUE(plan->job.hold_stdin);
  EXPECT_EQ(plan->job.stdin_path, "");
}

TEST_F(PlanExecTest, OptionsPassThrough) {
  Result<ExecPlan> defaults = PlanExec(t_.world, {{"pod"}, {"true"}});
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_FALSE(defaults->job.fail_fast);
  EXPECT_EQ(defaults->job.command_timeout, milliseconds(0));
  EXPECT_EQ(defaults->job.connect_timeout, kFanoutConnectTimeout);
  EXPECT_EQ(defaults->job.max_parallel, kDefaultFanoutParallel);

  ExecRequest request;
  request.targets = {"pod", "eval"};
  request.argv = {"true"};
  request.fail_fast = true;
  request.timeout = seconds(90);
  request.connect_timeout = seconds(3);
  request.max_parallel = 7;
  Result<ExecPlan> plan = PlanExec(t_.world, request);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->job.fail_fast);
  EXPECT_EQ(plan->job.command_timeout, seconds(90));
  EXPECT_EQ(plan->job.connect_timeout, seconds(3));
  EXPECT_EQ(plan->job.max_parallel, 7u);
  EXPECT_TRUE(plan->job.hold_stdin);
  EXPECT_EQ(plan->job.hosts.size(), 5u);
}

TEST_F(PlanExecTest, AnEmptyCommandIsInvalidArgument) {
  Result<ExecPlan> plan = Plan({"pod"}, {});
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(plan.status().message(), "`--`")) << plan.status().ToString();
  EXPECT_TRUE(t_.fanout.jobs.empty());
}

// Issue 11: one ssh-hosts node without a pinned key made `exec all` refuse the whole
// fleet. It stays in the job, keyless, and the fan-out fails it alone (fanout_engine.h).
TEST_F(PlanExecTest, Issue11AWorkerWithoutAPinnedKeyDoesNotStopTheOthers) {
  for (const std::vector<std::string>& targets :
       std::vector<std::vector<std::string>>{{"all"}, {"pod", "box:0"}}) {
    Result<ExecPlan> plan = Plan(targets);
    ASSERT_TRUE(plan.ok()) << Join(targets, " ") << ": " << plan.status().ToString();
    size_t keyless = 0;
    for (const FanoutHost& h : plan->job.hosts) {
      keyless += h.host_key.empty() ? 1 : 0;
      EXPECT_EQ(h.host_key.empty(), h.name == "box/w0") << h.name;
    }
    EXPECT_EQ(keyless, 1u);
    EXPECT_GE(plan->job.hosts.size(), 5u);
  }
}

// Issue 11: an ssh-hosts worker whose key up pinned is reached like any other.
TEST_F(PlanExecTest, Issue11AnSshHostsWorkerWithAPinnedKeyIsChecked) {
  records_[2].workers[0].host_key = kAliceKey;  // box
  ASSERT_EQ(t_.store->PutNode(records_[2]), Status::Ok());
  Result<ExecPlan> plan = Plan({"box"});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->job.hosts.size(), 1u);
  EXPECT_EQ(plan->job.hosts[0].host_key, kAliceKey);
  EXPECT_EQ(plan->job.hosts[0].port, 2222);
  EXPECT_EQ(plan->job.hosts[0].user, "me");
}

TEST_F(PlanExecTest, TargetErrorsComeThrough) {
  Result<ExecPlan> plan = Plan({"podd"});
  EXPECT_EQ(plan.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(plan.status().message(), "did you mean 'pod'")) << plan.status().ToString();
  EXPECT_EQ(Plan({"pod:4"}).status().code(), StatusCode::kInvalidArgument);
}

// The records up writes (FakeCloud's addresses and host keys) are what the job uses.
TEST(PlanExecAfterUp, HostsAreTheWorkersUpRecorded) {
  TestWorld t;
  UpReport r = t.Up(t.Spec(std::string("fleet: lab\nproject: ") + kProject +
                           "\nnodes:\n  - name: trainer\n    type: v4-32\n"
                           "    zones: [us-central2-b]\n"));
  ASSERT_EQ(r.nodes.size(), 1u);
  ASSERT_EQ(r.nodes[0].status, Status::Ok());
  NodeRecord rec = t.Record("trainer");
  ASSERT_EQ(rec.workers.size(), 4u);

  ExecRequest request;
  request.targets = {"trainer"};
  request.argv = {"hostname"};
  Result<ExecPlan> plan = PlanExec(t.world, request);

  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->job.hosts.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const FanoutHost& h = plan->job.hosts[i];
    EXPECT_EQ(h.name, "trainer/w" + std::to_string(i));
    EXPECT_EQ(h.address, rec.workers[i].address);
    EXPECT_FALSE(h.address.empty());
    EXPECT_EQ(h.host_key, rec.workers[i].host_key);
    EXPECT_FALSE(h.host_key.empty());
    EXPECT_EQ(h.user, "tester");
    EXPECT_EQ(h.port, 22);
  }
  // The key the job names is the fleet key up made (put on the nodes).
  EXPECT_EQ(plan->job.key_path, t.keys.Ensure().value().private_key_path);
  EXPECT_GT(t.keys.ensured(), 1) << "up asked for the key";
}

// ---------------------------------------------------------------------------------------
// StoppableCommand through a real local sh

// The wrapper run as a worker's login shell would (`sh -c LINE`), with a pipe for stdin
// that stays open until Close(): the SSH channel of a held-stdin job.
class Wrapped {
 public:
  explicit Wrapped(const std::vector<std::string>& argv) {
    int in[2];
    int out[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) {
      ADD_FAILURE() << "pipe2 failed";
      return;
    }
    UniqueFd in_read(in[0]);
    stdin_ = UniqueFd(in[1]);
    UniqueFd out_write(out[1]);
    stdout_ = UniqueFd(out[0]);
    SpawnOptions options;
    options.env = {"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"};
    Result<pid_t> pid = SpawnSubprocess({"/bin/sh", "-c", StoppableCommand(argv)}, options,
                                        SpawnStdio{in_read.get(), out_write.get()});
    EXPECT_TRUE(pid.ok()) << pid.status().ToString();
    pid_ = pid.ok() ? *pid : -1;
  }
  ~Wrapped() {
    if (pid_ > 0) {  // a failed test: do not leave it behind
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Wrapped(const Wrapped&) = delete;
  Wrapped& operator=(const Wrapped&) = delete;

  /// What it printed, until every holder of its stdout is gone.
  std::string ReadAll() {
    std::string all;
    char buf[4096];
    for (;;) {
      ssize_t n = ::read(stdout_.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n <= 0) {
        return all;
      }
      all.append(buf, static_cast<size_t>(n));
    }
  }
  /// Closes its stdin: what sshd does when the connection goes away.
  void Close() { stdin_.Reset(); }
  /// Its exit status (128 + signal when killed), or -1 when it has not ended within
  /// `limit`.
  int Wait(milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (pid_ > 0) {
      int status = 0;
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        return -1;
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  UniqueFd stdin_;
  UniqueFd stdout_;
};

// The command lines (as ps shows them, NULs as spaces) of live processes containing
// `marker`, other than zombies and this test.
std::vector<std::string> ProcessesWith(const std::string& marker) {
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string pid = entry.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos ||
        pid == std::to_string(::getpid())) {
      continue;
    }
    Result<std::string> cmdline = ReadFile(entry.path().string() + "/cmdline");
    if (!cmdline.ok() || cmdline->empty()) {
      continue;  // gone meanwhile, or a zombie
    }
    std::replace(cmdline->begin(), cmdline->end(), '\0', ' ');
    if (Contains(*cmdline, marker)) {
      found.push_back(pid + ": " + *cmdline);
    }
  }
  return found;
}

// Polls until `done` or `limit` passes; the processes it waits for take milliseconds.
template <typename F>
bool WaitUntil(milliseconds limit, F done) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
  return true;
}

TEST(StoppableCommand, EveryWordComesBackExactlyAsGiven) {
  std::vector<std::string> words = {
      "a b", "$HOME", "${HOME}", "x;y",  "it's",  "\"dq\"", "l1\nl2", "\\",     "\\n", "*",
      "-n",  "--",    "-e",      "`id`", "$(id)", "a=b",    "",       "\t tab", "é ü", "!x",
      "~",   "a|b",   "a&b",     "<in",  "#c",    "'",      "''",     "%s"};
  // printf's format is a word too: a backslash and an n, as typed in '%s\n'.
  std::vector<std::string> argv = {"printf", "%s\\n"};
  argv.insert(argv.end(), words.begin(), words.end());
  Wrapped run(argv);
  std::string out = run.ReadAll();
  EXPECT_EQ(run.Wait(seconds(10)), 0);
  std::string want;
  for (const std::string& w : words) {
    want += w + "\n";
  }
  EXPECT_EQ(out, want);
}

TEST(StoppableCommand, TheCommandsArgv0IsNotParsedEither) {
  // A command whose name has a space and a $: it must be looked up as typed and fail.
  Wrapped run({"no such $cmd", "x"});
  std::string out = run.ReadAll();
  EXPECT_EQ(run.Wait(seconds(10)), 127) << out;
  EXPECT_TRUE(Contains(out, "no such $cmd")) << out;
}

TEST(StoppableCommand, TheExitStatusIsTheCommands) {
  for (int code : {0, 1, 7, 255}) {
    Wrapped run({"sh", "-c", "echo out; echo err >&2; exit " + std::to_string(code)});
    std::string out = run.ReadAll();
    EXPECT_EQ(run.Wait(seconds(10)), code);
    EXPECT_TRUE(Contains(out, "out\n")) << out;
    EXPECT_TRUE(Contains(out, "err\n")) << out;
  }
}

TEST(StoppableCommand, TheCommandsStdinIsNotTheChannel) {
  // The channel is the watcher's: a command reading stdin sees EOF, not the channel.
  Wrapped run({"sh", "-c", "cat; echo after-cat"});
  std::string out = run.ReadAll();
  EXPECT_EQ(run.Wait(seconds(10)), 0);
  EXPECT_EQ(out, "after-cat\n");
}

TEST(StoppableCommand, ClosingStdinKillsTheWholeProcessGroupAtOnce) {
  // Unique to this run, so that no other process matches.
  std::string marker = "31." + std::to_string(::getpid()) + "7";
  Wrapped run({"sh", "-c", "sleep " + marker + " & sleep " + marker + "; wait"});
  std::string sleeper = "sleep " + marker;
  auto sleepers = [&] {
    size_t n = 0;
    for (const std::string& p : ProcessesWith(sleeper)) {
      n += p.find(": " + sleeper + " ") != std::string::npos;
    }
    return n;
  };
  ASSERT_TRUE(WaitUntil(seconds(10), [&] { return sleepers() == 2; }))
      << "the two sleeps never both ran: " << Join(ProcessesWith(marker), "; ");

  auto start = std::chrono::steady_clock::now();
  run.Close();
  int status = run.Wait(seconds(5));
  auto took = std::chrono::steady_clock::now() - start;

  EXPECT_NE(status, -1) << "the wrapper still runs 5 s after its stdin closed";
  EXPECT_NE(status, 0);
  EXPECT_LT(took, seconds(2));
  // The command's own background child too, which the wrapper never waited for.
  EXPECT_TRUE(WaitUntil(seconds(2), [&] { return ProcessesWith(marker).empty(); }))
      << "left running: " << Join(ProcessesWith(marker), "; ");
}

TEST(StoppableCommand, AFinishedCommandLeavesNothingBehind) {
  // The watcher (reading the still-open stdin) must go when the command ends.
  std::string marker = "tpufleet-exec-test-" + std::to_string(::getpid());
  Wrapped run({"echo", marker});
  std::string out = run.ReadAll();
  EXPECT_EQ(run.Wait(seconds(10)), 0);
  EXPECT_EQ(out, marker + "\n");
  EXPECT_TRUE(WaitUntil(seconds(2), [&] { return ProcessesWith(marker).empty(); }))
      << "left running: " << Join(ProcessesWith(marker), "; ");
}

}  // namespace
}  // namespace tpufleet
