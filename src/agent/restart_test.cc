// job.start of a job the agent has, with a larger restarts: the real agent starts an
// ended job again in its directory, the job sees TPUFLEET_RESTARTS, its logs go on, and
// every other start of a known id is refused as before.
#include <gtest/gtest.h>

#include <unistd.h>

#include "agent/running_agent.h"
#include "util/testing/status_printer.h"

namespace tpufleet::agent {
namespace {

// Waits (up to 10 s) until the job's logs are `text`.
void WaitForLogs(const RunningAgent& agent, const std::string& id, const std::string& text) {
  for (int i = 0; i < 200 && agent.Logs(id) != text; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(agent.Logs(id), text);
}

api::JobSpec Again(api::JobSpec spec, int restarts) {
  spec.restarts = restarts;
  return spec;
}

TEST(AgentRestart, AnEndedJobRunsAgainSeeingItsRestartsWithItsLogsAppended) {
  RunningAgent agent;
  api::JobSpec spec = RunningAgent::Job("jrestart", "echo run $TPUFLEET_RESTARTS; exit 1");
  ASSERT_TRUE(agent.StartJob(spec).status.ok());
  api::JobOnWorker first = agent.WaitEnded("jrestart");
  EXPECT_EQ(first.state, JobState::kFailed);
  EXPECT_EQ(first.restarts, 0);

  // The same id without a larger restarts is the same job: refused as always.
  EXPECT_EQ(agent.StartJob(spec).status,
            AlreadyExistsError("job jrestart exists on this worker"));

  api::AgentAnswer again = agent.StartJob(Again(spec, 1));
  ASSERT_TRUE(again.status.ok()) << again.status.ToString();
  EXPECT_EQ(std::get<api::JobOnWorker>(again.body).restarts, 1);
  api::JobOnWorker second = agent.WaitEnded("jrestart");
  EXPECT_EQ(second.state, JobState::kFailed);
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_EQ(second.restarts, 1);
  EXPECT_GE(second.started_unix_ms, first.ended_unix_ms);
  EXPECT_EQ(agent.Logs("jrestart"), "run 0\nrun 1\n");

  EXPECT_EQ(agent.StartJob(Again(spec, 1)).status,
            AlreadyExistsError("job jrestart exists on this worker at restarts 1 (a restart "
                               "gives a larger one)"));
  // What job.list says survives serve's restart (state.json and job.json say it).
  agent.Stop();
  agent.Start();
  EXPECT_EQ(agent.Job("jrestart").restarts, 1);
  ASSERT_TRUE(agent.StartJob(Again(spec, 3)).status.ok());
  EXPECT_EQ(agent.WaitEnded("jrestart").restarts, 3);
  EXPECT_EQ(agent.Logs("jrestart"), "run 0\nrun 1\nrun 3\n");
}

TEST(AgentRestart, OnlyAnEndedJobOfTheSameUserRunsAgainAndACancelDoesNotCarryOver) {
  RunningAgent agent;
  api::JobSpec spec = RunningAgent::Job("jrunning", "echo up $TPUFLEET_RESTARTS; sleep 60");
  ASSERT_TRUE(agent.StartJob(spec).status.ok());
  WaitForLogs(agent, "jrunning", "up 0\n");
  EXPECT_EQ(agent.StartJob(Again(spec, 1)).status,
            AlreadyExistsError("job jrunning exists on this worker and is running: only an "
                               "ended job is started again"));

  api::AgentRequest cancel;
  cancel.op = api::AgentOp::kJobCancel;
  cancel.id = "jrunning";
  cancel.grace_seconds = 1;
  ASSERT_TRUE(agent.Ask(cancel).status.ok());
  EXPECT_EQ(agent.WaitEnded("jrunning").state, JobState::kCancelled);

  if (geteuid() == 0) {  // the job is nobody's: root asking for root's is another user
    api::JobSpec roots = Again(spec, 1);
    roots.user = "root";
    EXPECT_EQ(agent.StartJob(roots).status,
              PermissionDeniedError("job jrunning is nobody's; root cannot start it again"));
  }
  ASSERT_TRUE(agent.StartJob(Again(spec, 1)).status.ok());
  WaitForLogs(agent, "jrunning", "up 0\nup 1\n");
  api::JobOnWorker running = agent.Job("jrunning");
  EXPECT_EQ(running.state, JobState::kRunning);
  EXPECT_EQ(running.restarts, 1);
  EXPECT_FALSE(running.signal.size() > 0 || running.exit_code.has_value());
  // Only a cancel of this run ends it.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(agent.Job("jrunning").state, JobState::kRunning);
  ASSERT_TRUE(agent.Ask(cancel).status.ok());
  EXPECT_EQ(agent.WaitEnded("jrunning").state, JobState::kCancelled);
}

// A bad restarts is refused before anything starts.
TEST(AgentRestart, NegativeRestartsIsRefused) {
  RunningAgent agent;
  EXPECT_EQ(agent.StartJob(Again(RunningAgent::Job("jnegativ", "true"), -1)).status,
            InvalidArgumentError("restarts is -1; it cannot be negative"));
}

}  // namespace
}  // namespace tpufleet::agent
