// On a worker shared by collaborators, each Unix user learns of their own jobs only:
// jobs.list and the metrics op's per-job samples as another user (nobody) asks them of
// the real agent, and KeepOwnJobs' rules on a report.
#include <gtest/gtest.h>

#include "agent/running_agent.h"
#include "agent/server.h"

namespace tpufleet::agent {
namespace {

std::vector<std::string> Ids(const api::AgentAnswer& a) {
  std::vector<std::string> ids;
  EXPECT_TRUE(a.status.ok()) << a.status.ToString();
  if (const auto* jobs = std::get_if<std::vector<api::JobOnWorker>>(&a.body)) {
    for (const api::JobOnWorker& j : *jobs) {
      ids.push_back(j.id);
    }
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

TEST(AgentOwnJobs, JobsListShowsAUserTheirOwnAndRootEveryOne) {
  if (auto why = NobodySkipReason()) {
    GTEST_SKIP() << *why;
  }
  RunningAgent agent;
  api::JobSpec root = RunningAgent::Job("jrootaaa", "sleep 30");
  root.user = "root";
  root.name = "roots";
  ASSERT_TRUE(agent.StartJob(root).status.ok());
  ASSERT_TRUE(agent.StartJob(RunningAgent::Job("jnobodya", "sleep 30")).status.ok());
  api::AgentRequest list;
  list.op = api::AgentOp::kJobList;
  EXPECT_EQ(Ids(agent.Ask(list, /*as_nobody=*/true)), std::vector<std::string>{"jnobodya"});
  EXPECT_EQ(Ids(agent.Ask(list)), (std::vector<std::string>{"jnobodya", "jrootaaa"}));
}

TEST(AgentOwnJobs, AUsersMetricsShowTheirOwnJobsOnly) {
  if (auto why = NobodySkipReason()) {
    GTEST_SKIP() << *why;
  }
  RunningAgent agent({"--sample-interval", "200"});
  api::JobSpec root = RunningAgent::Job("jrootaaa", "sleep 60");
  root.user = "root";
  root.name = "roots";
  ASSERT_TRUE(agent.StartJob(root).status.ok());
  ASSERT_TRUE(agent.StartJob(RunningAgent::Job("jnobodya", "sleep 60")).status.ok());
  api::AgentRequest r;
  r.op = api::AgentOp::kMetrics;
  auto jobs_of = [&](bool as_nobody) {
    std::vector<std::string> ids;
    api::AgentAnswer a = agent.Ask(r, as_nobody);
    if (const auto* report = std::get_if<api::MetricsReport>(&a.body)) {
      for (const JobSample& j : report->sample.jobs) {
        ids.push_back(j.id);
      }
    }
    std::sort(ids.begin(), ids.end());
    return ids;
  };
  // Until a sample has both running jobs.
  std::vector<std::string> all;
  for (int i = 0; i < 100 && all.size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    all = jobs_of(false);
  }
  ASSERT_EQ(all, (std::vector<std::string>{"jnobodya", "jrootaaa"}));
  EXPECT_EQ(jobs_of(true), std::vector<std::string>{"jnobodya"});
}

TEST(KeepOwnJobs, AnothersHolderKeepsItsPidAndUserButNotWhatItRuns) {
  MetricsReport report;
  report.sample.jobs = {{"jmine", "milo"}, {"jtheirs", "ada"}};
  ChipSample chip;
  chip.holders = {{11, "milo", "python mine.py", "jmine"},
                  {12, "ada", "python theirs.py --key x", "jtheirs"},
                  {13, "ada", "python by-hand.py", ""},
                  {14, "milo", "python by-hand.py", ""}};
  report.sample.chips = {chip};
  report.window.job = "jtheirs";
  report.window.job_cpu_percent = 99;
  KeepOwnJobs(report, {"jmine"}, "milo");
  ASSERT_EQ(report.sample.jobs.size(), 1u);
  EXPECT_EQ(report.sample.jobs[0].id, "jmine");
  const std::vector<ChipHolder>& h = report.sample.chips[0].holders;
  EXPECT_EQ(h[0].command, "python mine.py");
  EXPECT_EQ(h[1].pid, 12);
  EXPECT_EQ(h[1].user, "ada");
  EXPECT_EQ(h[1].command, "");
  EXPECT_EQ(h[1].job, "");
  EXPECT_EQ(h[2].command, "");
  EXPECT_EQ(h[3].command, "python by-hand.py");
  EXPECT_EQ(report.window.job, "");
  EXPECT_FALSE(report.window.job_cpu_percent.has_value());
}

}  // namespace
}  // namespace tpufleet::agent
