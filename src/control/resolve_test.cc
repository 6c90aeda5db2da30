// Issue 11, new-user fix 2: a worker's name keeps working after its address changes.
// ConnectToWorker (what `tpufleet ssh-proxy` does for ssh) and RunResolving (exec and
// cp) over a TestWorld whose FakeCloud moves a node's workers, as maintenance or a stop
// and start does; connects are faked, so nothing touches the network. The same through
// the emulator's real workers, OpenSSH and a running forward: test/resolve_e2e_test.sh.
#include "control/resolve.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "control/exec.h"
#include "control/testing/test_world.h"

namespace tpufleet {
namespace {

using std::chrono::milliseconds;
using testing::Contains;
using testing::kProject;
using testing::kZoneB;
using testing::TestWorld;

// Fleet "lab": trainer, a v4-32 (4 workers) in zone b.
constexpr char kSpec[] =
    "fleet: lab\nproject: lab-project\nnodes:\n  - name: trainer\n    type: v4-32\n"
    "    zones: [us-central2-b]\n";

// A connect that answers only at the addresses in `up`, and remembers what it tried.
struct FakeConnect {
  std::vector<std::string> up;
  std::vector<std::pair<std::string, milliseconds>> tried;

  Result<UniqueFd> operator()(const std::string& address, int, milliseconds timeout) {
    tried.emplace_back(address, timeout);
    if (std::find(up.begin(), up.end(), address) == up.end()) {
      return UnavailableError(address + ":22: No route to host");
    }
    return UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  }
};

class ResolveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(t_.Up(t_.Spec(kSpec)).nodes[0].status, Status::Ok());
    old_ = Address(1);
    ASSERT_FALSE(old_.empty());
    t_.cloud.ClearCalls();
    t_.fanout.jobs.clear();  // up's login checks; the tests count exec's jobs
  }

  std::string Address(int worker) { return t_.Record("trainer").workers.at(worker).address; }

  Result<UniqueFd> Connect(const std::string& node, int worker) {
    ResolveSeams seams = RealResolveSeams(t_.world);
    seams.connect = [this](const std::string& a, int p, milliseconds d) { return net_(a, p, d); };
    return ConnectToWorker(t_.world.store, node, worker, seams, &notes_);
  }

  TestWorld t_;
  std::string old_;
  FakeConnect net_;
  std::vector<std::string> notes_;
};

TEST_F(ResolveTest, Issue11ProxyFollowsAWorkerToItsNewAddress) {
  t_.cloud.MoveWorkers(kZoneB, "trainer");
  Result<std::vector<CloudNode>> listed = t_.cloud.ListNodes({kZoneB});
  ASSERT_TRUE(listed.ok());
  std::string now = listed->at(0).workers.at(1).address;
  ASSERT_NE(now, old_);
  net_.up = {now};

  Result<UniqueFd> fd = Connect("trainer", 1);

  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  ASSERT_EQ(net_.tried.size(), 2u);
  EXPECT_EQ(net_.tried[0].first, old_);
  EXPECT_EQ(net_.tried[0].second, kKnownAddressTimeout) << "the known address gets a short wait";
  EXPECT_EQ(net_.tried[1].first, now);
  EXPECT_EQ(net_.tried[1].second, kResolvedAddressTimeout);
  EXPECT_EQ(Address(1), now) << "the refresh is recorded, for every later command";
  EXPECT_TRUE(Contains(t_.SshConfig(), "HostName " + now));
  ASSERT_EQ(notes_.size(), 1u);
  EXPECT_EQ(notes_[0], "trainer:1 moved from " + old_ + " to " + now);
}

TEST_F(ResolveTest, Issue11ProxyAsksNoOneWhenTheKnownAddressAnswers) {
  net_.up = {old_};
  Result<UniqueFd> fd = Connect("trainer", 1);
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  EXPECT_EQ(net_.tried.size(), 1u);
  EXPECT_TRUE(t_.cloud.Calls().empty()) << "no API call when the worker answers";
  EXPECT_TRUE(notes_.empty());
}

TEST_F(ResolveTest, Issue11ProxyAsksNoOneWhenTheWorkerRefuses) {
  ResolveSeams seams = RealResolveSeams(t_.world);
  seams.connect = [](const std::string& a, int, milliseconds) -> Result<UniqueFd> {
    return UnavailableError(a + ":22: Connection refused");  // booting: no sshd yet
  };
  Result<UniqueFd> fd = ConnectToWorker(t_.world.store, "trainer", 1, seams, &notes_);
  ASSERT_FALSE(fd.ok());
  EXPECT_TRUE(Contains(fd.status().message(), "Connection refused"));
  EXPECT_TRUE(t_.cloud.Calls().empty()) << "the worker is at its address; no API call";
}

TEST_F(ResolveTest, Issue11ProxyTriesTheSameAddressAgainWhenTheCloudStillListsIt) {
  Result<UniqueFd> fd = Connect("trainer", 1);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), StatusCode::kUnavailable);
  ASSERT_EQ(net_.tried.size(), 2u);
  EXPECT_EQ(net_.tried[1], std::make_pair(old_, milliseconds(kResolvedAddressTimeout)));
  EXPECT_TRUE(Contains(fd.status().message(), "No route to host"));
  ASSERT_EQ(notes_.size(), 1u);
  EXPECT_TRUE(Contains(notes_[0], "which the cloud still lists"));
}

TEST_F(ResolveTest, Issue11ProxySaysSoWhenTheNodeIsGone) {
  t_.cloud.Vanish(kZoneB, "trainer");
  Result<UniqueFd> fd = Connect("trainer", 0);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(fd.status().message(), "node trainer is NOT_FOUND"))
      << fd.status().message();
  EXPECT_EQ(net_.tried.size(), 1u) << "nothing to connect to after the refresh";
  EXPECT_EQ(t_.Record("trainer").state, NodeState::kNotFound);
}

TEST_F(ResolveTest, Issue11ProxyNamesTheRefreshErrorToo) {
  ResolveSeams seams;
  seams.connect = [this](const std::string& a, int p, milliseconds d) { return net_(a, p, d); };
  seams.refresh = [](const std::string&) -> Result<NodeRecord> {
    return UnavailableError("HTTP 503");
  };
  Result<UniqueFd> fd = ConnectToWorker(t_.world.store, "trainer", 2, seams, nullptr);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Contains(fd.status().message(), "No route to host")) << fd.status().message();
  EXPECT_TRUE(Contains(fd.status().message(), "HTTP 503")) << fd.status().message();
}

TEST_F(ResolveTest, Issue11ProxyUnknownNodeOrWorker) {
  Result<UniqueFd> fd = Connect("nosuch", 0);
  EXPECT_EQ(fd.status().code(), StatusCode::kNotFound);
  fd = Connect("trainer", 4);
  EXPECT_EQ(fd.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(net_.tried.empty());
  EXPECT_TRUE(t_.cloud.Calls().empty());
}

TEST(Issue11, ProxyTargetIsANodeNameAndAnIndex) {
  int index = -1;
  EXPECT_EQ(CheckProxyTarget("trainer", "3", &index), Status::Ok());
  EXPECT_EQ(index, 3);
  for (const char* node : {"-oProxyCommand=x", "a b", "a;b", "$(id)", "", "a'b"}) {
    EXPECT_EQ(CheckProxyTarget(node, "0", &index).code(), StatusCode::kInvalidArgument) << node;
  }
  for (const char* worker : {"-1", "x", "1;id", "", "99999999999"}) {
    EXPECT_EQ(CheckProxyTarget("trainer", worker, &index).code(), StatusCode::kInvalidArgument)
        << worker;
  }
}

// What RunResolving's sink got.
class Results final : public FanoutSink {
 public:
  void OnOutput(size_t host, OutputStream, std::string_view data) override {
    out[host] += std::string(data);
  }
  void OnResult(size_t host, const HostResult& result) override { results[host] = result; }
  std::map<size_t, std::string> out;
  std::map<size_t, HostResult> results;
};

class RunResolvingTest : public ResolveTest {
 protected:
  // Every address but those in `down` runs the command: it prints its address.
  void Serve(std::vector<std::string> down) {
    t_.fanout.respond = [down](const FanoutHost& h, size_t i, FanoutSink& sink) {
      if (std::find(down.begin(), down.end(), h.address) != down.end()) {
        return HostResult{HostOutcome::kUnreachable, 0, "", "connect: No route to host"};
      }
      sink.OnOutput(i, OutputStream::kStdout, h.address);
      return HostResult{};
    };
  }
  Status Run(const std::vector<std::string>& targets, bool fail_fast = false) {
    ExecRequest request;
    request.targets = targets;
    request.argv = {"hostname"};
    request.fail_fast = fail_fast;
    Result<ExecPlan> plan = PlanExec(t_.world, request);
    if (!plan.ok()) {
      return plan.status();
    }
    return RunResolving(t_.world, plan->workers, plan->job, sink_);
  }
  Results sink_;
};

TEST_F(RunResolvingTest, Issue11ExecRunsAgainAtTheNewAddressAfterOneRefresh) {
  std::vector<std::string> before = {Address(0), Address(1), Address(2), Address(3)};
  t_.cloud.MoveWorkers(kZoneB, "trainer");
  Serve(before);  // nothing answers at the old addresses

  ASSERT_EQ(Run({"trainer:1-2"}), Status::Ok());

  ASSERT_EQ(t_.fanout.jobs.size(), 2u);
  ASSERT_EQ(t_.fanout.jobs[1].hosts.size(), 2u) << "the moved workers, again";
  EXPECT_EQ(t_.cloud.CallCount("ListNodes"), 1) << "one refresh for the run";
  for (size_t i : {0u, 1u}) {
    EXPECT_TRUE(sink_.results[i].ok()) << sink_.results[i].message;
    EXPECT_EQ(sink_.out[i], Address(static_cast<int>(i) + 1)) << "ran at the new address";
    EXPECT_NE(sink_.out[i], before[i + 1]);
  }
}

TEST_F(RunResolvingTest, Issue11ExecKeepsTheResultOfAWorkerThatDidNotMove) {
  Serve({old_});  // worker 1 is down at the address the cloud still lists
  ASSERT_EQ(Run({"trainer"}), Status::Ok());
  EXPECT_EQ(t_.fanout.jobs.size(), 1u) << "nothing moved: nothing runs twice";
  EXPECT_EQ(sink_.results.size(), 4u);
  EXPECT_EQ(sink_.results[1].outcome, HostOutcome::kUnreachable);
  EXPECT_TRUE(sink_.results[0].ok());
  EXPECT_EQ(t_.cloud.CallCount("ListNodes"), 1);
}

TEST_F(RunResolvingTest, Issue11ExecAsksNoOneWhenEveryWorkerAnswers) {
  Serve({});
  ASSERT_EQ(Run({"all"}), Status::Ok());
  EXPECT_EQ(t_.fanout.jobs.size(), 1u);
  EXPECT_TRUE(t_.cloud.Calls().empty());
}

TEST_F(RunResolvingTest, Issue11ExecNeverRunsAgainWhereTheCommandStarted) {
  t_.cloud.MoveWorkers(kZoneB, "trainer");
  // Worker 0's connection broke after its command started: not a connect failure.
  t_.fanout.respond = [](const FanoutHost&, size_t i, FanoutSink&) {
    return i == 0 ? HostResult{HostOutcome::kUnreachable, 0, "", "the connection broke"}
                  : HostResult{};
  };
  ASSERT_EQ(Run({"trainer"}), Status::Ok());
  EXPECT_EQ(t_.fanout.jobs.size(), 1u);
  EXPECT_TRUE(t_.cloud.Calls().empty());
  EXPECT_EQ(sink_.results[0].message, "the connection broke");
}

TEST_F(RunResolvingTest, Issue11FailFastRecordsTheMoveButRunsNothingAgain) {
  std::string before = Address(0);
  t_.cloud.MoveWorkers(kZoneB, "trainer");
  Serve({before});
  ASSERT_EQ(Run({"trainer:0"}, true), Status::Ok());
  EXPECT_EQ(t_.fanout.jobs.size(), 1u);
  EXPECT_EQ(sink_.results[0].outcome, HostOutcome::kUnreachable);
  EXPECT_TRUE(Contains(sink_.results[0].message, "its address is now " + Address(0)))
      << sink_.results[0].message;
  EXPECT_NE(Address(0), before) << "the store knows the new address for the next command";
}

}  // namespace
}  // namespace tpufleet
