// The real tpufleet-agent: serve on a temporary socket, its jobs run by real keepers as
// nobody (as this user when not root), talked to with the real `call`.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <thread>

#include "agent/running_agent.h"
#include "util/subprocess.h"
#include "util/testing/temp_dir.h"

namespace tpufleet::agent {
namespace {

using api::AgentOp;
using api::AgentRequest;

TEST(AgentServe, HelloAndOneClearErrorForABadRequest) {
  RunningAgent agent;
  AgentRequest hello;
  api::AgentAnswer a = agent.Ask(hello);
  ASSERT_TRUE(a.status.ok()) << a.status.ToString();
  const auto& h = std::get<api::AgentHello>(a.body);
  EXPECT_EQ(h.uid, static_cast<int>(geteuid()));
  EXPECT_EQ(h.protocol, std::vector<int>{1});
  EXPECT_EQ(h.binary_sha256.size(), 64u);

  CallOutput bad = agent.Call(R"({"v":1,"op":"job.explode"})");
  EXPECT_EQ(bad.exit_code, 0);
  EXPECT_EQ(bad.output,
            R"({"end":true,"error":{"code":"INVALID_ARGUMENT","message":"unknown op \"job.explode\"; )"
            R"(this agent knows hello, job.start, job.list, job.cancel, job.logs, job.watch, )"
            R"(devices, doctor, accounts.apply, disks.mount, metrics, notice, notice.watch"},"ok":false,"v":1})"
            "\n");
  CallOutput v2 = agent.Call(R"({"v":2,"op":"hello"})");
  EXPECT_NE(v2.output.find("FAILED_PRECONDITION"), std::string::npos) << v2.output;
  EXPECT_NE(v2.output.find("this agent speaks 1"), std::string::npos) << v2.output;

  // No serve: call says so, and exits 3.
  agent.Stop();
  CallOutput none = agent.Call(R"({"v":1,"op":"hello"})");
  EXPECT_EQ(none.exit_code, api::kAgentNotRunningExit);
  EXPECT_NE(none.output.find("no tpufleet-agent is running on this host"), std::string::npos)
      << none.output;
}

TEST(AgentServe, OnlyOneServePerSocket) {
  RunningAgent agent;
  Result<ProgramResult> second =
      RunSubprocess({TPUFLEET_AGENT_BINARY, "serve", "--socket", agent.Socket(), "--state-dir",
                     agent.StateDir()},
                    "", std::chrono::seconds(10), SpawnOptions{});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->exit_code, 1);
  EXPECT_EQ(second->output, "tpufleet-agent: another tpufleet-agent serve runs here (it holds " +
                                agent.dir().Path("run/lock") + ")\n");
}

TEST(AgentServe, ExitCodesSignalsAndAMissingCommand) {
  RunningAgent agent;
  ASSERT_TRUE(agent.StartJob(RunningAgent::Job("jexit3aa", "echo out; echo err >&2; exit 3")).status.ok());
  ASSERT_TRUE(agent.StartJob(RunningAgent::Job("jtrueaaa", "true")).status.ok());
  ASSERT_TRUE(agent.StartJob(RunningAgent::Job("jkillaaa", "kill -KILL $$")).status.ok());
  ASSERT_TRUE(agent.StartJob(RunningAgent::Job("jnocmdaa", "no-such-command-tpufleet")).status.ok());

  api::JobOnWorker exited = agent.WaitEnded("jexit3aa");
  EXPECT_EQ(exited.state, JobState::kFailed);
  EXPECT_EQ(exited.exit_code, 3);
  EXPECT_EQ(exited.user, geteuid() == 0 ? "nobody" : exited.user);
  EXPECT_GT(exited.pid, 0);
  EXPECT_GE(exited.ended_unix_ms, exited.started_unix_ms);
  EXPECT_EQ(agent.Logs("jexit3aa"), "out\nerr\n");

  EXPECT_EQ(agent.WaitEnded("jtrueaaa").state, JobState::kSucceeded);
  api::JobOnWorker killed = agent.WaitEnded("jkillaaa");
  EXPECT_EQ(killed.state, JobState::kFailed);
  EXPECT_EQ(killed.signal, "KILL");
  EXPECT_FALSE(killed.exit_code.has_value());

  api::JobOnWorker missing = agent.WaitEnded("jnocmdaa");
  EXPECT_EQ(missing.state, JobState::kFailed);
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_EQ(missing.message, "");  // the process ran: bash said why, in the log
  EXPECT_NE(agent.Logs("jnocmdaa").find("no-such-command-tpufleet: command not found"),
            std::string::npos);
}

TEST(AgentServe, TheJobHasItsUserAndEnvironment) {
  RunningAgent agent;
  api::JobSpec spec = RunningAgent::Job("jenvaaaa", "echo $USER $TPUFLEET_JOB_ID $TPUFLEET_RANK "
                                                    "$TPUFLEET_WORLD_SIZE $MY_VAR $(id -u) $PWD");
  spec.env = {{"MY_VAR", "hello"}};
  spec.name = "env-check";
  api::AgentAnswer a = agent.StartJob(spec);
  ASSERT_TRUE(a.status.ok()) << a.status.ToString();
  EXPECT_EQ(std::get<api::JobOnWorker>(a.body).name, "env-check");
  agent.WaitEnded("jenvaaaa");
  std::string uid = geteuid() == 0 ? std::to_string(LookUpNobody()->uid) : std::to_string(geteuid());
  std::string user = std::get<api::JobOnWorker>(a.body).user;
  EXPECT_EQ(agent.Logs("jenvaaaa"), user + " jenvaaaa 0 1 hello " + uid + " /tmp\n");

  // The same id again, and a workdir that is not there: one clear error each.
  api::AgentAnswer again = agent.StartJob(spec);
  EXPECT_EQ(again.status, AlreadyExistsError("job jenvaaaa exists on this worker"));
  spec.id = "jenvbbbb";
  spec.workdir = "/nonexistent-dir";
  EXPECT_EQ(agent.StartJob(spec).status,
            InvalidArgumentError("workdir /nonexistent-dir: No such file or directory"));
  EXPECT_FALSE(agent.dir().path().empty());
  EXPECT_EQ(ListDirectory(JobsDir(agent.StateDir())).size(), 1u);  // nothing else made
}

TEST(AgentServe, DryRunChecksAndStartsNothing) {
  RunningAgent agent;
  AgentRequest r;
  r.op = AgentOp::kJobStart;
  r.job = RunningAgent::Job("jdryaaaa", "true");
  r.dry_run = true;
  api::AgentAnswer a = agent.Ask(r);
  ASSERT_TRUE(a.status.ok()) << a.status.ToString();
  EXPECT_EQ(std::get<api::JobOnWorker>(a.body).state, JobState::kStarting);
  EXPECT_TRUE(ListDirectory(JobsDir(agent.StateDir())).empty());
  r.job.workdir = "/etc/passwd";
  EXPECT_EQ(agent.Ask(r).status, InvalidArgumentError("workdir /etc/passwd: Not a directory"));
}

// The job outlives the client that follows it (SIGKILLed) and serve (stopped and
// started again): the new serve finds its keeper and sees it end.
TEST(AgentServe, AJobSurvivesItsClientAndARestartOfServe) {
  RunningAgent agent;
  // The job ends when the test says so (a file appears), not after a time that a loaded
  // machine could spend restarting serve.
  TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);  // the job may run as nobody
  const std::string gate = dir.Path("go");
  ASSERT_TRUE(agent
                  .StartJob(RunningAgent::Job(
                      "jlongaaa", "echo begin; while [ ! -e " + gate + " ]; do sleep 0.05; done; echo end"))
                  .status.ok());
  AgentRequest follow;
  follow.op = AgentOp::kJobLogs;
  follow.id = "jlongaaa";
  follow.follow = true;
  pid_t client = fork();
  if (client == 0) {
    agent.Call(api::ToLine(follow));
    _exit(0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(client, SIGKILL);
  waitpid(client, nullptr, 0);
  agent.Stop(SIGKILL);
  EXPECT_EQ(agent.Call(R"({"v":1,"op":"hello"})").exit_code, api::kAgentNotRunningExit);
  agent.Start();
  EXPECT_EQ(agent.Job("jlongaaa").state, JobState::kRunning);
  dir.Write("go", "");
  api::JobOnWorker done = agent.WaitEnded("jlongaaa");
  EXPECT_EQ(done.state, JobState::kSucceeded);
  EXPECT_EQ(agent.Logs("jlongaaa"), "begin\nend\n");
}

TEST(AgentServe, AJobWhoseKeeperVanishedIsLost) {
  RunningAgent agent;
  ASSERT_TRUE(agent.StartJob(RunningAgent::Job("jlostaaa", "sleep 30")).status.ok());
  api::JobOnWorker running = agent.WaitFor("jlostaaa", [](const api::JobOnWorker& j) {
    return j.state == JobState::kRunning;
  });
  pid_t keeper = KeeperPid(JobDir(agent.StateDir(), "jlostaaa"));
  ASSERT_GT(keeper, 0);
  kill(keeper, SIGKILL);
  api::JobOnWorker lost = agent.WaitEnded("jlostaaa");
  EXPECT_EQ(lost.state, JobState::kLost);
  EXPECT_NE(lost.message.find("ended without recording the job's end"), std::string::npos);
  kill(-running.pid, SIGKILL);
}

TEST(AgentServe, CancelSendsTermThenKill) {
  RunningAgent agent;
  ASSERT_TRUE(agent.StartJob(RunningAgent::Job("jtermaaa", "sleep 60")).status.ok());
  ASSERT_TRUE(agent.StartJob(RunningAgent::Job("jstubbor", "trap '' TERM; echo ready; sleep 60; sleep 60"))
                  .status.ok());
  agent.WaitFor("jstubbor", [&](const api::JobOnWorker&) { return agent.Logs("jstubbor") == "ready\n"; });
  AgentRequest cancel;
  cancel.op = AgentOp::kJobCancel;
  cancel.id = "jtermaaa";
  api::AgentAnswer a = agent.Ask(cancel);
  ASSERT_TRUE(a.status.ok()) << a.status.ToString();
  EXPECT_EQ(std::get<api::JobOnWorker>(a.body).state, JobState::kCancelled);
  EXPECT_EQ(std::get<api::JobOnWorker>(a.body).signal, "TERM");

  cancel.id = "jstubbor";
  cancel.grace_seconds = 1;
  auto start = std::chrono::steady_clock::now();
  a = agent.Ask(cancel);
  ASSERT_TRUE(a.status.ok()) << a.status.ToString();
  EXPECT_EQ(std::get<api::JobOnWorker>(a.body).state, JobState::kCancelled);
  EXPECT_EQ(std::get<api::JobOnWorker>(a.body).signal, "KILL");
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(900));

  cancel.id = "jnothere";
  EXPECT_EQ(agent.Ask(cancel).status, NotFoundError("no job jnothere on this worker"));
}

// Another user (nobody) may not list a job of root's, read its logs, cancel it or
// watch it, nor start a job as someone else.
TEST(AgentServe, AnotherUsersJobIsNotYours) {
  if (auto why = NobodySkipReason()) {
    GTEST_SKIP() << *why;
  }
  RunningAgent agent;
  api::JobSpec spec = RunningAgent::Job("jrootaaa", "sleep 30");
  spec.user = "root";
  ASSERT_TRUE(agent.StartJob(spec).status.ok());
  AgentRequest r;
  r.op = AgentOp::kJobCancel;
  r.id = "jrootaaa";
  Status denied = PermissionDeniedError(
      "job jrootaaa is root's: only they and root may see its logs or cancel it");
  EXPECT_EQ(agent.Ask(r, /*as_nobody=*/true).status, denied);
  r.op = AgentOp::kJobLogs;
  EXPECT_EQ(agent.Ask(r, true).status, denied);
  r.op = AgentOp::kJobList;
  r.ids = {"jrootaaa"};
  api::AgentAnswer listed = agent.Ask(r, true);
  EXPECT_TRUE(listed.status.ok());
  EXPECT_TRUE(std::get<std::vector<api::JobOnWorker>>(listed.body).empty());
  r.op = AgentOp::kJobStart;
  r.job = spec;
  r.job.id = "jrootbbb";
  EXPECT_EQ(agent.Ask(r, true).status,
            PermissionDeniedError("only root may start a job as another user (nobody asked for root)"));
  EXPECT_EQ(agent.Job("jrootaaa").state, JobState::kRunning);
}

}  // namespace
}  // namespace tpufleet::agent
