// CallAgents over a TestWorld whose workers answer as node agents (FakeAgents): what
// each worker's `call` gets (its command line, the request on stdin), how answers,
// streamed lines and the agent's errors come back, and that a worker without a
// running agent, without the binary, unreachable or answering nonsense is a result of
// that worker with a message saying what to do, never an error of the call.
#include "control/agent_client.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "control/testing/job_lab.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

using testing::Contains;

class AgentClientTest : public testing::JobLab {
 protected:
  Result<std::vector<AgentReply>> List(const std::vector<std::string>& words,
                                       bool admin = false) {
    AgentCall call;
    call.request.op = api::AgentOp::kJobList;
    call.admin = admin;
    return CallAgents(t_.world, Workers(words), call);
  }

  static api::JobOnWorker Job(const std::string& id, int worker) {
    api::JobOnWorker j;
    j.id = id;
    j.name = "train";
    j.worker = worker;
    j.state = JobState::kRunning;
    return j;
  }
};

TEST_F(AgentClientTest, EachWorkerRunsCallWithItsNumberAndReadsTheRequestOnStdin) {
  Result<std::vector<AgentReply>> replies = List({"pod"});
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  ASSERT_EQ(t_.fanout.jobs.size(), 1u);
  const FanoutJob& job = t_.fanout.jobs[0];
  ASSERT_EQ(job.hosts.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(job.hosts[i].command,
              "/usr/local/bin/tpufleet-agent call --worker " + std::to_string(i));
  }
  // One request line, the same for every worker: `call --worker N` adds the number.
  EXPECT_EQ(job.stdin_header.find('\n'), job.stdin_header.size() - 1);
  EXPECT_FALSE(Contains(job.stdin_header, "\"worker\""));
  EXPECT_TRUE(job.hold_stdin);
  ASSERT_EQ(agents_.calls().size(), 4u);
  EXPECT_EQ(agents_.calls()[2].request.worker, 2);
}

// First the worker's sshd is asked to connect the agent's socket itself (no process on
// the worker), the request with the worker's number its input; `call` is where it will
// not (ssh.FanoutEngineTest.*Socket* show both against a real sshd).
TEST_F(AgentClientTest, EachWorkersAgentSocketIsAskedFirstWithItsNumberInTheRequest) {
  ASSERT_TRUE(List({"pod"}).ok());
  const FanoutJob& job = t_.fanout.jobs.back();
  ASSERT_EQ(job.hosts.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const FanoutHost& host = job.hosts[i];
    EXPECT_EQ(host.unix_socket, "/run/tpufleet-agent/agent.sock");
    Result<api::AgentRequest> sent = api::ParseAgentRequest(Trim(host.socket_input));
    ASSERT_TRUE(sent.ok()) << host.socket_input;
    EXPECT_EQ(sent->op, api::AgentOp::kJobList);
    EXPECT_EQ(sent->worker, i);
    EXPECT_EQ(host.socket_input.find('\n'), host.socket_input.size() - 1);
  }
}

TEST_F(AgentClientTest, AdminOpsRunCallThroughSudoWithoutAPassword) {
  ASSERT_TRUE(List({"solo"}, true).ok());
  EXPECT_EQ(t_.fanout.jobs.back().hosts[0].command,
            "sudo -n /usr/local/bin/tpufleet-agent call --worker 0");
  EXPECT_EQ(t_.fanout.jobs.back().hosts[0].unix_socket, "") << "root's ops go through sudo";
}

TEST_F(AgentClientTest, AnswersComeBackParsedInTheWorkersOrder) {
  agents_.Put("pod/w1", Job("jaaaaaaa", 1));
  agents_.Put("pod/w3", Job("jaaaaaaa", 3));
  Result<std::vector<AgentReply>> replies = List({"pod"});
  ASSERT_TRUE(replies.ok());
  ASSERT_EQ(replies->size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const AgentReply& r = (*replies)[i];
    EXPECT_TRUE(r.answered);
    EXPECT_EQ(r.status, Status::Ok());
    const auto* jobs = std::get_if<std::vector<api::JobOnWorker>>(&r.body);
    ASSERT_NE(jobs, nullptr);
    EXPECT_EQ(jobs->size(), i % 2 == 1 ? 1u : 0u);
  }
  EXPECT_EQ(std::get<std::vector<api::JobOnWorker>>((*replies)[3].body)[0].worker, 3);
}

TEST_F(AgentClientTest, AWorkerThatCannotAnswerIsItsOwnResultSayingWhatToDo) {
  agents_.worker("pod/w1").agent_running = false;
  agents_.worker("pod/w2").installed = false;
  agents_.worker("pod/w3").unreachable = true;
  Result<std::vector<AgentReply>> replies = List({"pod"});
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  EXPECT_EQ((*replies)[0].status, Status::Ok());
  EXPECT_EQ((*replies)[1].status,
            FailedPreconditionError("the agent is not running on pod/w1: run `tpufleet up`"));
  EXPECT_EQ((*replies)[2].status,
            FailedPreconditionError("tpufleet-agent is not installed on pod/w2: run `tpufleet up`"));
  EXPECT_EQ((*replies)[3].status.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Contains((*replies)[3].status.message(), "pod/w3: connect to 198.18.0.5"));
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_FALSE((*replies)[i].answered);
  }
}

TEST_F(AgentClientTest, TheAgentsOwnErrorKeepsItsCodeAndNamesTheWorker) {
  AgentCall call;
  call.request.op = api::AgentOp::kJobCancel;
  call.request.id = "jzzzzzzz";
  Result<std::vector<AgentReply>> replies = CallAgents(t_.world, Workers({"solo"}), call);
  ASSERT_TRUE(replies.ok());
  EXPECT_TRUE((*replies)[0].answered);
  EXPECT_EQ((*replies)[0].status, NotFoundError("solo/w0: no job jzzzzzzz"));
}

TEST_F(AgentClientTest, StreamedLinesReachTheCallbackAsTheyComeAndTheEndGivesTheResult) {
  agents_.Put("pod/w0", Job("jaaaaaaa", 0));
  agents_.Put("pod/w1", Job("jaaaaaaa", 1));
  agents_.worker("pod/w0").stdout_text["jaaaaaaa"] = "step 1\nstep 2\n";
  agents_.worker("pod/w1").stderr_text["jaaaaaaa"] = "warning\n";
  AgentCall call;
  call.request.op = api::AgentOp::kJobLogs;
  call.request.id = "jaaaaaaa";
  call.request.follow = true;
  std::vector<std::string> seen;
  Result<std::vector<AgentReply>> replies =
      CallAgents(t_.world, Workers({"pod:0-1"}), call,
                 [&](size_t worker, const api::AgentLine& line) {
                   std::string w = std::to_string(worker);
                   if (line.kind == api::AgentLine::Kind::kData) {
                     seen.push_back(w + " " + line.chunk.stream + " " + line.chunk.data);
                   } else {
                     seen.push_back(w + " state " + std::string(api::JobStateName(line.state.state)));
                   }
                 });
  ASSERT_TRUE(replies.ok());
  EXPECT_EQ(seen, (std::vector<std::string>{"0 stdout step 1\nstep 2\n", "0 state running",
                                            "1 stderr warning\n", "1 state running"}));
  EXPECT_EQ((*replies)[0].status, Status::Ok());
  EXPECT_EQ((*replies)[1].status, Status::Ok());
}

TEST_F(AgentClientTest, AStreamingCallWithoutACallbackIsRefused) {
  AgentCall call;
  call.request.op = api::AgentOp::kJobWatch;
  call.request.ids = {"jaaaaaaa"};
  EXPECT_EQ(CallAgents(t_.world, Workers({"solo"}), call).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(t_.fanout.jobs.empty());
}

TEST_F(AgentClientTest, AnAnswerThatCannotBeReadOrNeverEndsIsAnErrorOfThatWorker) {
  t_.fanout.respond = [](const FanoutHost& host, size_t index, FanoutSink& sink) {
    if (host.name == "pod/w0") {
      sink.OnOutput(index, OutputStream::kStdout, "Welcome to Ubuntu\n");
    } else if (host.name == "pod/w1") {
      sink.OnOutput(index, OutputStream::kStdout, std::string(api::kMaxAgentLineBytes + 2, 'x'));
    } else if (host.name == "pod/w2") {
      sink.OnOutput(index, OutputStream::kStdout, "{\"v\":1,\"ok\":tr");  // cut off
    } else {
      sink.OnOutput(index, OutputStream::kStderr, "sudo: a password is required\n");
      return HostResult{HostOutcome::kExited, 1, "", ""};
    }
    return HostResult{};
  };
  Result<std::vector<AgentReply>> replies = List({"pod"}, true);
  ASSERT_TRUE(replies.ok());
  EXPECT_EQ((*replies)[0].status.code(), StatusCode::kInternal);
  EXPECT_TRUE(Contains((*replies)[0].status.message(),
                       "the agent on pod/w0 answered something unreadable"));
  EXPECT_EQ((*replies)[1].status,
            InternalError("the agent on pod/w1 sent a line longer than the protocol allows"));
  EXPECT_EQ((*replies)[2].status, InternalError("the agent on pod/w2 ended without an answer"));
  EXPECT_EQ((*replies)[3].status,
            PermissionDeniedError("pod/w3: the login may not run the agent as root (sudo: a "
                                  "password is required)"));
}

TEST_F(AgentClientTest, AJobsEnvironmentTravelsOnStdinNeverOnACommandLine) {
  AgentCall call;
  call.request.op = api::AgentOp::kJobStart;
  call.request.job.id = "jaaaaaaa";
  call.request.job.command = "python3 train.py";
  call.request.job.env = {{"WANDB_API_KEY", "s3cr3t-value"}};
  call.request.job.topology.worker_addresses = {"198.18.1.2"};
  ASSERT_TRUE(CallAgents(t_.world, Workers({"solo"}), call).ok());
  const FanoutJob& job = t_.fanout.jobs.back();
  EXPECT_TRUE(Contains(job.stdin_header, "s3cr3t-value"));
  EXPECT_FALSE(Contains(job.command, "s3cr3t"));
  EXPECT_FALSE(Contains(job.hosts[0].command, "s3cr3t"));
  EXPECT_EQ(agents_.calls().back().request.job.env.at("WANDB_API_KEY"), "s3cr3t-value");
}

}  // namespace
}  // namespace tpufleet
