// doctor over a TestWorld whose trainer (a v4-32 that up made) answers as node agents
// do: what each agent is told to expect, the CLI's own checks (the agent answers, at the
// CLI's version, the clock), failures first, and the record's agent forgotten where the
// next `up` must look again (issue 12).
#include "control/doctor.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "control/testing/test_world.h"
#include "control/testing/up_specs.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

using testing::Contains;

class DoctorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(t_.Up(t_.Spec(testing::Trainer())).nodes[0].status, Status::Ok());
    sha_ = t_.AgentSha256();
    t_.fanout.respond = [this](const FanoutHost& host, size_t index, FanoutSink& sink) {
      return Answer(host, index, sink);
    };
  }

  std::vector<WorkerDiagnosis> Run() {
    std::vector<WorkerTarget> workers = ResolveTargets(*t_.store, {"trainer"}).value();
    Result<std::vector<WorkerDiagnosis>> d = Doctor(t_.world, t_.catalog, workers);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return d.ok() ? *d : std::vector<WorkerDiagnosis>{};
  }

  static const api::DoctorCheck* Check(const WorkerDiagnosis& d, const std::string& name) {
    for (const api::DoctorCheck& c : d.checks) {
      if (c.name == name) {
        return &c;
      }
    }
    return nullptr;
  }

  // The agent of each worker: its binary's hash, unless stopped; its own checks.
  HostResult Answer(const FanoutHost& host, size_t index, FanoutSink& sink) {
    const FanoutJob& job = t_.fanout.jobs[t_.fanout.answering];
    HostResult r;
    if (stopped_.count(host.name)) {
      sink.OnOutput(index, OutputStream::kStderr, "tpufleet-agent: the agent is not running\n");
      r.exit_code = api::kAgentNotRunningExit;
      return r;
    }
    api::AgentRequest q = api::ParseAgentRequest(Trim(job.stdin_header)).value();
    api::AgentAnswer a;
    if (q.op == api::AgentOp::kHello) {
      api::AgentHello h;
      h.agent_version = "0.1.0";
      h.binary_sha256 = sha_of_.count(host.name) ? sha_of_[host.name] : sha_;
      h.time_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           t_.clock.Now().time_since_epoch())
                           .count() +
                       (skew_ms_.count(host.name) ? skew_ms_[host.name] : 0);
      a.body = h;
    } else {
      expected_.push_back(q.expect);
      api::DoctorReport report;
      auto bad = failing_.find(host.name);
      report.checks.push_back(bad != failing_.end() ? bad->second
                                                    : api::DoctorCheck{"accelerators", true,
                                                                       "4 chips", ""});
      a.body = report;
    }
    sink.OnOutput(index, OutputStream::kStdout, api::AnswerLine(a) + "\n");
    return r;
  }

  testing::TestWorld t_;
  std::string sha_;
  std::set<std::string> stopped_;                      // by worker name, "trainer/w2"
  std::map<std::string, std::string> sha_of_;          // another build's, by name
  std::map<std::string, int64_t> skew_ms_;             // clock offsets, by name
  std::map<std::string, api::DoctorCheck> failing_;    // a failed check of the agent's
  std::vector<api::DoctorExpect> expected_;
};

TEST_F(DoctorTest, AHealthyNodePassesAndEachAgentIsToldWhatTheApiSays) {
  std::vector<WorkerDiagnosis> d = Run();
  ASSERT_EQ(d.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(d[i].ok()) << d[i].worker.name;
    EXPECT_EQ(d[i].worker.worker, static_cast<int>(i));
    std::vector<std::string> names;
    for (const api::DoctorCheck& c : d[i].checks) {
      names.push_back(c.name);
    }
    EXPECT_EQ(names, (std::vector<std::string>{"agent", "agent_version", "clock", "accelerators"}));
  }
  ASSERT_EQ(expected_.size(), 4u);
  CloudNode node = t_.cloud.AllNodes()[0];
  std::vector<std::string> internal;
  for (const CloudWorker& w : node.workers) {
    internal.push_back(w.address);
  }
  EXPECT_EQ(expected_[0].accelerator_type, "v4-32");
  EXPECT_EQ(expected_[0].chips_per_host, 4);
  EXPECT_EQ(expected_[0].endpoints, internal);
}

TEST_F(DoctorTest, FailuresComeFirstEachNamingItsWorkerAndWhatToDo) {
  sha_of_["trainer/w1"] = std::string(64, 'e');
  stopped_.insert("trainer/w2");
  failing_["trainer/w3"] = {"accelerators", false, "2 of 4 chips",
                            "recreate the node: a chip is missing"};

  std::vector<WorkerDiagnosis> d = Run();

  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0].worker.name, "trainer/w1");
  EXPECT_EQ(d[1].worker.name, "trainer/w2");
  EXPECT_EQ(d[2].worker.name, "trainer/w3");
  EXPECT_EQ(d[3].worker.name, "trainer/w0");
  EXPECT_TRUE(d[3].ok());

  const api::DoctorCheck* version = Check(d[0], "agent_version");
  ASSERT_NE(version, nullptr);
  EXPECT_FALSE(version->ok);
  EXPECT_EQ(version->detail, "runs eeeeeeeeeeee, the CLI has " + sha_.substr(0, 12));
  EXPECT_EQ(version->fix, "old agent version: run `tpufleet up` to replace it");

  ASSERT_EQ(d[1].checks.size(), 1u) << "nothing more can be asked of a stopped agent";
  EXPECT_EQ(d[1].checks[0].name, "agent");
  EXPECT_FALSE(d[1].checks[0].ok);
  EXPECT_TRUE(Contains(d[1].checks[0].detail, "not running")) << d[1].checks[0].detail;
  EXPECT_TRUE(Contains(d[1].checks[0].fix, "tpufleet up"));

  EXPECT_FALSE(d[2].ok());
  EXPECT_EQ(Check(d[2], "accelerators")->detail, "2 of 4 chips");

  // The next `up` looks again at the stale agents, and only at them.
  NodeRecord rec = t_.Record("trainer");
  EXPECT_EQ(rec.workers[0].agent_sha256, sha_);
  EXPECT_EQ(rec.workers[1].agent_sha256, "");
  EXPECT_EQ(rec.workers[2].agent_sha256, "");
  EXPECT_EQ(rec.workers[3].agent_sha256, sha_);
  testing::FakeWorkers fresh(t_.fanout);  // workers answering up again
  fresh.SetAgent("trainer-w0", sha_);
  fresh.SetAgent("trainer-w3", sha_);
  ASSERT_EQ(t_.Up(t_.Spec(testing::Trainer())).nodes[0].status, Status::Ok());
  EXPECT_EQ(fresh.installs(), 2) << "on w1 and w2";
}

TEST_F(DoctorTest, AWorkerWhoseClockIsOffFails) {
  skew_ms_["trainer/w2"] = -5000;
  std::vector<WorkerDiagnosis> d = Run();
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].worker.name, "trainer/w2");
  const api::DoctorCheck* clock = Check(d[0], "clock");
  ASSERT_NE(clock, nullptr);
  EXPECT_FALSE(clock->ok);
  EXPECT_TRUE(Contains(clock->detail, "-5.000 s from this machine's clock")) << clock->detail;
  EXPECT_TRUE(d[1].ok());
}

TEST(ClockCheck, HalfTheRoundTripIsAllowedOnTopOfTheLimit) {
  struct Case {
    int64_t worker, sent, answered;
    bool ok;
    std::string detail;
  } cases[] = {
      {10'000, 10'000, 10'000, true, "+0.000 s from this machine's clock (±0.000 s)"},
      {11'100, 10'000, 10'000, false,
       "+1.100 s from this machine's clock (±0.000 s), more than 1.000 s"},
      // Sent at 10.0, answered at 10.4: the worker's 11.3 is 1.1 s after the middle,
      // within 1 s plus the 0.2 s that the middle may be off.
      {11'300, 10'000, 10'400, true, "+1.100 s from this machine's clock (±0.200 s)"},
      {8'500, 10'000, 10'000, false,
       "-1.500 s from this machine's clock (±0.000 s), more than 1.000 s"},
  };
  for (const Case& c : cases) {
    api::DoctorCheck got = ClockCheck(c.worker, c.sent, c.answered);
    EXPECT_EQ(got.ok, c.ok) << c.detail;
    EXPECT_EQ(got.detail, c.detail);
    EXPECT_EQ(got.fix.empty(), c.ok);
  }
}

}  // namespace
}  // namespace tpufleet
