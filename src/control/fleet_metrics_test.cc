// One metrics round (control/fleet_metrics.h) over a TestWorld whose workers answer as
// node agents (FakeAgents): the request each worker gets, a worker that does not answer
// or does not know the op, and the verdicts per worker, node and job, with the jobs'
// workers found from the samples. The rules of the verdicts: core/diagnosis_test.cc.
#include "control/fleet_metrics.h"

#include <gtest/gtest.h>

#include "control/testing/job_lab.h"

namespace tpufleet {
namespace {

constexpr int64_t kNow = 1'767'225'600'000;  // FakeClock's and FakeAgents' "now"

MetricsReport Report(double duty, const std::string& job, bool input_bound = false) {
  return testing::WorkerReport(kNow, duty, job, input_bound);
}

class FleetMetricsTest : public testing::JobLab {
 protected:
  Result<FleetMetrics> Sample(const std::vector<std::string>& words, MetricsOptions o = {}) {
    return SampleFleet(t_.world, Workers(words), o);
  }
};

TEST_F(FleetMetricsTest, EveryWorkerIsAskedOnceWithTheHistoryWanted) {
  for (int i = 0; i < 4; ++i) {
    agents_.worker("pod/w" + std::to_string(i)).metrics = Report(60, "jaaaaaaa");
  }
  MetricsOptions o;
  o.query.history_seconds = 600;
  o.query.step_seconds = 30;
  Result<FleetMetrics> f = Sample({"pod"}, o);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  std::vector<testing::FakeAgents::Call> calls = agents_.CallsOf(api::AgentOp::kMetrics);
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[1].request.metrics.history_seconds, 600);
  EXPECT_EQ(calls[1].request.metrics.step_seconds, 30);
  EXPECT_EQ(t_.fanout.jobs.size(), 1u);  // one round: one fan-out
  ASSERT_EQ(f->workers.size(), 4u);
  for (const WorkerMetrics& w : f->workers) {
    ASSERT_TRUE(w.report.has_value()) << w.target.name;
    EXPECT_EQ(w.report->sample.chips[0].duty_cycle_percent, 60);
    EXPECT_EQ(w.diagnosis.verdict, Verdict::kBusy) << w.diagnosis.detail;
  }
  ASSERT_EQ(f->nodes.size(), 1u);
  EXPECT_EQ(f->nodes[0].diagnosis.verdict, Verdict::kBusy);
  ASSERT_EQ(f->jobs.size(), 1u);
  EXPECT_EQ(f->jobs[0].name, "jaaaaaaa");
  EXPECT_EQ(f->jobs[0].user, "alice");
  EXPECT_EQ(f->jobs[0].workers, (std::vector<size_t>{0, 1, 2, 3}));
}

TEST_F(FleetMetricsTest, AWorkerThatDoesNotAnswerIsAResultOfItsOwnWithTheReason) {
  agents_.worker("pod/w0").metrics = Report(60, "jaaaaaaa");
  agents_.worker("pod/w1").unreachable = true;
  agents_.worker("pod/w2").agent_running = false;
  // pod/w3: an agent from before the metrics op.
  Result<FleetMetrics> f = Sample({"pod"});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_TRUE(f->workers[0].report.has_value());
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_FALSE(f->workers[i].report.has_value());
    EXPECT_EQ(f->workers[i].diagnosis.verdict, Verdict::kUnknown);
    EXPECT_EQ(f->workers[i].diagnosis.detail, f->workers[i].status.message());
  }
  EXPECT_EQ(f->workers[1].status.code(), StatusCode::kUnavailable);
  EXPECT_NE(f->workers[1].status.message().find("No route to host"), std::string::npos);
  EXPECT_EQ(f->workers[2].status.message(), "the agent is not running on pod/w2: run `tpufleet up`");
  EXPECT_NE(f->workers[3].status.message().find("unknown op"), std::string::npos);
  // The job's group counts the workers that did not answer: they may run it too.
  ASSERT_EQ(f->jobs.size(), 1u);
  EXPECT_EQ(f->jobs[0].workers, (std::vector<size_t>{0, 1, 2, 3}));
}

TEST_F(FleetMetricsTest, InputBoundWorkerAndStragglerJob) {
  for (int i = 0; i < 4; ++i) {
    agents_.worker("pod/w" + std::to_string(i)).metrics =
        i == 2 ? Report(8, "jaaaaaaa", true) : Report(60, "jaaaaaaa");
  }
  agents_.worker("solo/w0").metrics = Report(0, "");
  Result<FleetMetrics> f = Sample({"all"});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ(f->workers.size(), 5u);
  EXPECT_EQ(f->workers[2].diagnosis.verdict, Verdict::kInputBound) << f->workers[2].diagnosis.detail;
  const GroupMetrics* job = FindJobGroup(*f, "jaaaaaaa");
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->node, "pod");
  EXPECT_EQ(job->diagnosis.verdict, Verdict::kStraggler) << job->diagnosis.detail;
  EXPECT_EQ(job->diagnosis.worker, 2);
  const GroupMetrics* pod = FindNodeGroup(*f, "pod");
  ASSERT_NE(pod, nullptr);
  EXPECT_EQ(pod->diagnosis.verdict, Verdict::kStraggler);
  // solo: no job, no holder, unused for an hour.
  const GroupMetrics* solo = FindNodeGroup(*f, "solo");
  ASSERT_NE(solo, nullptr);
  EXPECT_EQ(solo->diagnosis.verdict, Verdict::kIdle) << solo->diagnosis.detail;
  EXPECT_EQ(FindJobGroup(*f, "jbbbbbbb"), nullptr);
}

TEST(JudgeFleet, AStragglersIndexIsItsWorkerNumberAndIdleAfterIsHonoured) {
  // Workers 4..7 of a node (a target of NODE:4-7): the straggler is worker 6, not index 2.
  std::vector<WorkerMetrics> ws;
  for (int i = 4; i < 8; ++i) {
    WorkerMetrics w;
    w.target.node = "pod";
    w.target.worker = i;
    w.target.name = "pod/w" + std::to_string(i);
    w.report = Report(i == 6 ? 5 : 70, "jaaaaaaa");
    ws.push_back(w);
  }
  FleetMetrics f = JudgeFleet(ws, kNow);
  ASSERT_EQ(f.jobs.size(), 1u);
  EXPECT_EQ(f.jobs[0].diagnosis.verdict, Verdict::kStraggler);
  EXPECT_EQ(f.jobs[0].diagnosis.worker, 6);
  // An hour unused: idle after 10 minutes, quiet still when idle means two hours.
  WorkerMetrics unused = ws[0];
  unused.report = Report(0, "");
  EXPECT_EQ(JudgeFleet({unused}, kNow).workers[0].diagnosis.verdict, Verdict::kIdle);
  EXPECT_EQ(JudgeFleet({unused}, kNow, std::chrono::hours(2)).workers[0].diagnosis.verdict,
            Verdict::kQuiet);
}

}  // namespace
}  // namespace tpufleet
