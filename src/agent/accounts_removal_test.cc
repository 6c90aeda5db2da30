// accounts.apply's removal through the real agent (issue 16): the jobs of the account
// taken away end recorded as cancelled (through the job table, not lost), and its
// processes are gone. Root only, in the mount namespace of host/testing/accounts_fixture.h
// (the agent serve started here inherits it: its /etc and /home are the copies).
#include <gtest/gtest.h>
#include <sched.h>

#include <cerrno>
#include <cstring>

#include "agent/host/testing/accounts_fixture.h"
#include "agent/host/user_db.h"
#include "agent/host/user_processes.h"
#include "agent/running_agent.h"

namespace tpufleet::agent {
namespace {

// Also in a network namespace of its own: the agent's metadata guard (nftables) then
// changes nothing of the machine's.
class AgentAccountRemoval : public host::Accounts {
 protected:
  void SetUp() override {
    host::Accounts::SetUp();
    if (IsSkipped() || HasFatalFailure()) {
      return;
    }
    ASSERT_EQ(::unshare(CLONE_NEWNET), 0) << std::strerror(errno);
    ASSERT_EQ(host::Command({"ip", "link", "set", "lo", "up"}), 0);
  }
};

TEST_F(AgentAccountRemoval, ARemovedUsersJobsEndCancelledAndTheirProcessesAreGone) {
  RunningAgent agent;
  api::AgentRequest apply;
  apply.op = api::AgentOp::kAccountsApply;
  apply.users = {{"milo", {host::kKey1}, false}, {"ada", {host::kKey2}, false}};
  api::AgentAnswer made = agent.Ask(apply);
  ASSERT_TRUE(made.status.ok()) << made.status.ToString();
  ASSERT_EQ(std::get<api::AccountsReport>(made.body).results.at(0).action, "created");

  api::JobSpec milos = RunningAgent::Job("jmiloaaa", "sleep 600");
  milos.user = "milo";
  milos.name = "milos";
  api::JobSpec adas = RunningAgent::Job("jadaaaaa", "sleep 600");
  adas.user = "ada";
  adas.name = "adas";
  api::AgentAnswer started = agent.StartJob(milos);
  ASSERT_TRUE(started.status.ok()) << started.status.ToString();
  started = agent.StartJob(adas);
  ASSERT_TRUE(started.status.ok()) << started.status.ToString();
  auto running = [](const api::JobOnWorker& j) { return j.state == JobState::kRunning; };
  agent.WaitFor("jmiloaaa", running);
  agent.WaitFor("jadaaaaa", running);

  apply.users = {{"ada", {host::kKey2}, false}};
  apply.remove = {{"milo", false}};
  api::AgentAnswer removed = agent.Ask(apply);
  ASSERT_TRUE(removed.status.ok()) << removed.status.ToString();
  const auto& results = std::get<api::AccountsReport>(removed.body).results;
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[1].name, "milo");
  EXPECT_EQ(results[1].action, "revoked");
  EXPECT_EQ(results[1].error, "");

  EXPECT_EQ(agent.WaitEnded("jmiloaaa").state, JobState::kCancelled);
  EXPECT_EQ(host::CountProcessesOf(paths_, host::LookUpUser("/etc", "milo").value().uid), 0);
  EXPECT_EQ(agent.Job("jadaaaaa").state, JobState::kRunning) << "another user's job ended";
}

}  // namespace
}  // namespace tpufleet::agent
