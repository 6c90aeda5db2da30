// `tpufleet top`, and the verdicts of `jobs` and `status`, through Main over a TestWorld
// whose workers answer as node agents (FakeAgents): the snapshot as a table and as
// --json, a worker that does not answer, bad flags, the refusal without a terminal, and
// the VERDICT columns. What is drawn: top_view_test.cc; the live view: top_screen_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/testing/lent_world.h"
#include "cli/testing/run_cli.h"
#include "control/testing/job_lab.h"
#include "util/strings.h"

namespace tpufleet::cli {
namespace {

using cli_testing::Contains;
using cli_testing::Output;
using cli_testing::Tpufleet;

constexpr int64_t kNow = 1'767'225'600'000;

class TopCommandTest : public tpufleet::testing::JobLab {
 protected:
  // Worker `name`'s agent answers: testing::WorkerReport's.
  void Answer(const std::string& name, double duty, bool job = true, bool input_bound = false) {
    agents_.worker(name).metrics =
        tpufleet::testing::WorkerReport(kNow, duty, job ? "jaaaaaaa" : "", input_bound);
  }

  // pod runs jaaaaaaa at 60 %, worker 2 input-bound at 8 %; solo is unused.
  void Pod() {
    for (int i = 0; i < 4; ++i) {
      Answer("pod/w" + std::to_string(i), i == 2 ? 8 : 60, true, i == 2);
      api::JobOnWorker j;
      j.id = "jaaaaaaa";
      j.name = "train";
      j.user = "alice";
      j.worker = i;
      j.state = JobState::kRunning;
      j.created_unix_ms = kNow;
      j.started_unix_ms = kNow;
      agents_.Put("pod/w" + std::to_string(i), j);
    }
    Answer("solo/w0", 0, false);
  }

  int opened_ = 0;
  App app_ = cli_testing::AppLending(t_.world, &opened_);
};

TEST_F(TopCommandTest, OnceIsATableOfWorkersAndTheVerdictsInWords) {
  Pod();
  Output o = Tpufleet(app_, {"top", "--once"});
  EXPECT_EQ(o.code, 0) << o.err;
  std::vector<std::string> lines = Split(o.out, '\n');
  ASSERT_GE(lines.size(), 6u) << o.out;
  EXPECT_TRUE(StartsWith(lines[0], "NODE  ")) << o.out;
  EXPECT_TRUE(StartsWith(lines[3], "pod   w2      input-bound  ▁▁▁▁ 8%")) << o.out;
  EXPECT_TRUE(Contains(lines[1], "▅▅▅▅ 60%  ▂▂▂▂ 32/128G  20%  10/40G  pid 4242 alice jaaaaaaa "
                                 "python3 train.py"))
      << o.out;
  EXPECT_TRUE(Contains(o.out, "\njob jaaaaaaa (pod): straggler")) << o.out;
  EXPECT_TRUE(Contains(o.out, "\nnode solo: idle")) << o.out;
  EXPECT_TRUE(Contains(o.out, "\npod/w2: input-bound")) << o.out;
  // One round: one metrics call per worker, no history asked without --since.
  std::vector<testing::FakeAgents::Call> calls = agents_.CallsOf(api::AgentOp::kMetrics);
  EXPECT_EQ(calls.size(), 5u);
  EXPECT_EQ(calls[0].request.metrics.history_seconds, 0);
}

TEST_F(TopCommandTest, TargetsSortFilterFoldAndSince) {
  Pod();
  Output o = Tpufleet(app_, {"top", "pod", "--once", "--sort", "duty", "--filter", "W2"});
  EXPECT_EQ(o.code, 0) << o.err;
  std::vector<std::string> lines = Split(o.out, '\n');
  ASSERT_GE(lines.size(), 2u);
  EXPECT_TRUE(StartsWith(lines[1], "pod   w2")) << o.out;
  EXPECT_FALSE(Contains(o.out, "solo")) << o.out;
  o = Tpufleet(app_, {"top", "--once", "--fold", "--since", "10m"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(Contains(o.out, "pod   4 wkrs")) << o.out;
  EXPECT_TRUE(Contains(o.out, "DUTY~")) << o.out;
  std::vector<testing::FakeAgents::Call> calls = agents_.CallsOf(api::AgentOp::kMetrics);
  EXPECT_EQ(calls.back().request.metrics.history_seconds, 600);
  EXPECT_EQ(calls.back().request.metrics.step_seconds, 30);
}

TEST_F(TopCommandTest, AWorkerThatDoesNotAnswerKeepsItsRowAndFailsTheSnapshot) {
  Pod();
  agents_.worker("pod/w3").unreachable = true;
  Output o = Tpufleet(app_, {"top", "--once", "pod"});
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_TRUE(Contains(o.out, "pod   w3      unknown      no answer: pod/w3: connect to "
                              "198.18.0.5 port 22: No route to host"))
      << o.out;
}

TEST_F(TopCommandTest, JsonHasNodesWorkersReportsAndJobs) {
  Pod();
  agents_.worker("solo/w0").agent_running = false;
  Output o = Tpufleet(app_, {"top", "--json"});
  EXPECT_EQ(o.code, 1) << o.err;
  nlohmann::json j = nlohmann::json::parse(o.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << o.out;
  ASSERT_EQ(j["nodes"].size(), 2u);
  EXPECT_EQ(j["nodes"][0]["name"], "pod");
  EXPECT_EQ(j["nodes"][0]["workers"][2]["verdict"], "input-bound");
  EXPECT_EQ(j["nodes"][0]["workers"][0]["report"]["sample"]["chips"][1]["duty_cycle_percent"],
            60.0);
  EXPECT_EQ(j["nodes"][1]["workers"][0]["error"],
            "the agent is not running on solo/w0: run `tpufleet up`");
  ASSERT_EQ(j["jobs"].size(), 1u);
  EXPECT_EQ(j["jobs"][0]["verdict"], "straggler");
  EXPECT_EQ(j["jobs"][0]["worker"], 2);
}

TEST_F(TopCommandTest, BadFlagsAndNoTerminal) {
  Output o = Tpufleet(app_, {"top", "--once", "--sort", "memory"});
  EXPECT_EQ(o.code, 2);
  EXPECT_TRUE(Contains(o.err, "--sort takes name, duty, hbm, cpu or verdict")) << o.err;
  o = Tpufleet(app_, {"top", "--once", "--since", "2d"});
  EXPECT_EQ(o.code, 2);
  EXPECT_TRUE(Contains(o.err, "at most 24h")) << o.err;
  o = Tpufleet(app_, {"top", "--once", "--refresh", "0"});
  EXPECT_EQ(o.code, 2) << o.err;
  o = Tpufleet(app_, {"top", "nosuchnode", "--once"});
  EXPECT_EQ(o.code, 1);
  EXPECT_TRUE(Contains(o.err, "nosuchnode")) << o.err;
  o = Tpufleet(app_, {"top"});
  EXPECT_EQ(o.code, 1);
  EXPECT_TRUE(Contains(o.err, "top's live view needs a terminal; `tpufleet top --once`")) << o.err;
  EXPECT_TRUE(agents_.CallsOf(api::AgentOp::kMetrics).empty());
}

TEST_F(TopCommandTest, JobsShowsARunningJobsVerdict) {
  Pod();
  Output o = Tpufleet(app_, {"jobs"});
  EXPECT_EQ(o.code, 0) << o.err;
  std::vector<std::string> lines = Split(o.out, '\n');
  EXPECT_TRUE(StartsWith(lines[0], "JOB       NAME   NODE  STATE    VERDICT    EXIT")) << o.out;
  EXPECT_TRUE(StartsWith(lines[1], "jaaaaaaa  train  pod   running  straggler  -x4")) << o.out;
  nlohmann::json j = cli_testing::TpufleetJson(app_, {"jobs"});
  EXPECT_EQ(j["jobs"][0]["verdict"], "straggler");
  EXPECT_TRUE(j["jobs"][0]["verdict_detail"].is_string());
  // Only the running job's workers were asked.
  for (const auto& c : agents_.CallsOf(api::AgentOp::kMetrics)) {
    EXPECT_NE(c.worker, "solo/w0");
  }
}

TEST_F(TopCommandTest, JobsAsksForNoMetricsWhenNoJobRuns) {
  Pod();
  for (int i = 0; i < 4; ++i) {
    agents_.End("pod/w" + std::to_string(i), "jaaaaaaa", 0, kNow + 1000);
  }
  Output o = Tpufleet(app_, {"jobs"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_FALSE(Contains(o.out, "VERDICT")) << o.out;
  EXPECT_TRUE(agents_.CallsOf(api::AgentOp::kMetrics).empty());
}

TEST_F(TopCommandTest, StatusShowsTheVerdictOfNodesWithAnAgentOnly) {
  Pod();
  Output o = Tpufleet(app_, {"status"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_FALSE(Contains(o.out, "VERDICT")) << o.out;  // no node has the agent up installed
  EXPECT_TRUE(agents_.CallsOf(api::AgentOp::kMetrics).empty());
  Result<std::vector<NodeRecord>> nodes = t_.store->Nodes("lab");
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  for (NodeRecord& r : *nodes) {
    for (WorkerRecord& w : r.workers) {
      w.agent_sha256 = r.name == "pod" ? "abc123" : "-";  // solo: up may not install it
    }
    ASSERT_EQ(t_.store->PutNode(r), Status::Ok());
  }
  o = Tpufleet(app_, {"status"});
  EXPECT_EQ(o.code, 0) << o.err;
  std::vector<std::string> lines = Split(o.out, '\n');
  EXPECT_TRUE(Contains(lines[0], " VERDICT    WORKERS  AGE")) << o.out;
  bool pod = false;
  for (const std::string& l : lines) {
    pod = pod || (StartsWith(l, "pod ") && Contains(l, " straggler "));
    EXPECT_FALSE(StartsWith(l, "solo ") && !Contains(l, " - ")) << l;
  }
  EXPECT_TRUE(pod) << o.out;
  for (const auto& c : agents_.CallsOf(api::AgentOp::kMetrics)) {
    EXPECT_TRUE(StartsWith(c.worker, "pod/")) << c.worker;
  }
  cli_testing::TpufleetJson(app_, {"status"});
  EXPECT_EQ(agents_.CallsOf(api::AgentOp::kMetrics).size(), 4u);  // --json asked none
}

}  // namespace
}  // namespace tpufleet::cli
