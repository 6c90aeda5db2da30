// The agent protocol's lines encoded from fixed values and compared with their golden
// files in src/api/testdata/agent_*.json (TPUFLEET_UPDATE_GOLDEN=1 rewrites them: see
// api/testing/golden.h), read back, and the refusals a bad line gets.
#include "api/agent.h"

#include <gtest/gtest.h>

#include "api/testing/golden.h"

namespace tpufleet::api {
namespace {

using api_testing::ExpectGolden;

JobSpec Spec() {
  JobSpec s;
  s.id = "jab2cd3e";
  s.name = "train";
  s.command = "python3 train.py --steps 10";
  s.workdir = "/home/alice/model";
  s.env = {{"DATA", "/mnt/data"}, {"SEED", "7"}};
  s.accelerator = true;
  s.pty = true;
  s.topology = {"v4-16", {"198.18.0.2", "198.18.0.3"}, 4, 8482};
  s.worker = 1;
  s.started_by = "alice@laptop";
  return s;
}

JobOnWorker Waiting() {
  JobOnWorker j;
  j.id = "jab2cd3e";
  j.name = "train";
  j.user = "alice";
  j.command = "python3 train.py";
  j.worker = 1;
  j.state = JobState::kWaiting;
  j.created_unix_ms = 1764000000000;
  j.waiting_for = TpuHolder{4242, "bob", "python3 eval.py", "jzzzzzz2"};
  j.started_by = "alice@laptop";
  j.world_size = 2;
  return j;
}

JobOnWorker Killed() {
  JobOnWorker j = Waiting();
  j.state = JobState::kCancelled;
  j.waiting_for.reset();
  j.pid = 5151;
  j.signal = "TERM";
  j.started_unix_ms = 1764000001000;
  j.ended_unix_ms = 1764000061000;
  return j;
}

// Each line of the golden file is one line of the protocol, as the agent writes it.
TEST(AgentProtocol, Lines) {
  AgentRequest start;
  start.op = AgentOp::kJobStart;
  start.job = Spec();
  start.dry_run = true;
  AgentRequest logs;
  logs.op = AgentOp::kJobLogs;
  logs.id = "jab2cd3e";
  logs.tail = 100;
  logs.follow = true;
  JobOnWorker exited = Killed();
  exited.state = JobState::kFailed;
  exited.signal.clear();
  exited.exit_code = 127;
  std::string text;
  for (const std::string& line :
       {ToLine(start), ToLine(logs), ToLine(AgentRequest{}),
        AnswerLine({Status::Ok(), Waiting()}),
        AnswerLine({Status::Ok(), std::vector<JobOnWorker>{Killed(), exited}}),
        AnswerLine({NotFoundError("no job jzzzzzzz on this worker"), {}}),
        AnswerLine({Status::Ok(), AgentHello{"0.12.0", "ab12", {1}, "t1v-n-0-w-1", "b00t",
                                             1764000000123, 1000}}),
        DataLine({"stderr", "step 1\n"}), StateLine(exited), EndLine(Status::Ok()),
        EndLine(PermissionDeniedError("job jab2cd3e is alice's"))}) {
    text += line + "\n";
  }
  ExpectGolden("src/api/testdata/agent_lines.jsonl", text);
}

// notice and notice.watch, and a restart: job.start and the state of a job started again.
TEST(AgentProtocol, NoticesAndRestarts) {
  AgentNotice preempted{true, "NONE", 1764000005000, "metadata", ""};
  AgentNotice maintenance{false, "TERMINATE_ON_HOST_MAINTENANCE", 1764000009000, "metadata", ""};
  AgentNotice none{false, "NONE", 0, "none", "no metadata server at 169.254.169.254:80"};
  AgentRequest notice;
  notice.op = AgentOp::kNotice;
  AgentRequest watch;
  watch.op = AgentOp::kNoticeWatch;
  AgentRequest restart;
  restart.op = AgentOp::kJobStart;
  restart.job = Spec();
  restart.job.restarts = 2;
  JobOnWorker again = Waiting();
  again.restarts = 2;
  std::string text;
  for (const std::string& line :
       {ToLine(notice), ToLine(watch),
        AnswerLine({Status::Ok(), preempted}), NoticeLine(maintenance), NoticeLine(none),
        ToLine(restart), StateLine(again)}) {
    text += line + "\n";
  }
  ExpectGolden("src/api/testdata/agent_notice_lines.jsonl", text);

  Result<AgentLine> answer = ParseAgentLine(AnswerLine({Status::Ok(), preempted}), AgentOp::kNotice);
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  EXPECT_EQ(answer->kind, AgentLine::Kind::kAnswer);
  EXPECT_EQ(std::get<AgentNotice>(answer->answer.body), preempted);
  Result<AgentLine> line = ParseAgentLine(NoticeLine(maintenance), AgentOp::kNoticeWatch);
  ASSERT_TRUE(line.ok()) << line.status().ToString();
  EXPECT_EQ(line->kind, AgentLine::Kind::kNotice);
  EXPECT_EQ(line->notice, maintenance);
  Result<AgentRequest> back = ParseAgentRequest(ToLine(restart));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->job.restarts, 2);
  Result<AgentLine> state = ParseAgentLine(StateLine(again), AgentOp::kJobWatch);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->state.restarts, 2);
  // A job never restarted has no "restarts" (what older agents and CLIs wrote).
  EXPECT_EQ(ToJson(Spec()).find("restarts"), std::string::npos);
  Result<AgentLine> wrong =
      ParseAgentLine(R"({"v":1,"notice":{"preempted":"TRUE"}})", AgentOp::kNoticeWatch);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message(), "answer: \"notice.preempted\" is string, not true or false");
}

TEST(AgentProtocol, HostAnswers) {
  DevicesReport devices;
  devices.devices = {{0, "/dev/accel0", "0000:00:04.0", "v4"},
                     {1, "/dev/accel1", "0000:00:05.0", "v4"}};
  devices.lockfile = {true, 4242};
  devices.holders = {{"/dev/accel0", 4242, "bob", "python3 eval.py", "jzzzzzz2"}};
  DoctorReport doctor;
  doctor.checks = {{"devices", true, "4 of 4 v4 chips", ""},
                   {"disk /tmp", false, "120 MiB free", "free space on /tmp"}};
  doctor.time_unix_ms = 1764000000000;
  AccountsReport accounts;
  accounts.results = {{"alice", "created", "", ""},
                      {"root", "sudo_only", "", "an account tpufleet did not make keeps its keys"}};
  accounts.metadata_guard = {true, {"alice"}, "", "the metadata server's token is kept from alice"};
  AgentRequest mount;
  mount.op = AgentOp::kDisksMount;
  mount.mounts = {{"imagenet", "/data", true}, {"scratch", "/mnt/scratch", false}};
  std::vector<MountResult> mounted = {
      {"imagenet", "/data", "mounted", ""},
      {"scratch", "/mnt/scratch", "refused", "disk scratch is not attached to this worker"}};
  std::string text = AnswerLine({Status::Ok(), devices}) + "\n" +
                     AnswerLine({Status::Ok(), doctor}) + "\n" +
                     AnswerLine({Status::Ok(), accounts}) + "\n" + ToLine(mount) + "\n" +
                     AnswerLine({Status::Ok(), mounted}) + "\n";
  ExpectGolden("src/api/testdata/agent_host_lines.jsonl", text);

  Result<AgentRequest> mount_back = ParseAgentRequest(ToLine(mount));
  ASSERT_TRUE(mount_back.ok()) << mount_back.status().ToString();
  EXPECT_EQ(mount_back->mounts.size(), 2u);
  EXPECT_TRUE(mount_back->mounts[0].read_only);
  Result<AgentLine> mounted_back =
      ParseAgentLine(AnswerLine({Status::Ok(), mounted}), AgentOp::kDisksMount);
  ASSERT_TRUE(mounted_back.ok()) << mounted_back.status().ToString();
  EXPECT_EQ(std::get<std::vector<MountResult>>(mounted_back->answer.body).at(1).action, "refused");

  Result<AgentLine> accounts_back =
      ParseAgentLine(AnswerLine({Status::Ok(), accounts}), AgentOp::kAccountsApply);
  ASSERT_TRUE(accounts_back.ok()) << accounts_back.status().ToString();
  const auto& report = std::get<AccountsReport>(accounts_back->answer.body);
  EXPECT_EQ(report.results.at(1).action, "sudo_only");
  EXPECT_TRUE(report.metadata_guard.active);
  EXPECT_EQ(report.metadata_guard.users, std::vector<std::string>{"alice"});

  Result<AgentLine> back = ParseAgentLine(AnswerLine({Status::Ok(), devices}), AgentOp::kDevices);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(std::get<DevicesReport>(back->answer.body).holders.at(0).user, "bob");
  EXPECT_EQ(std::get<DevicesReport>(back->answer.body).lockfile.locked_by_pid, 4242);
}

// accounts.apply's "remove" (users remove) round-trips, and a request without one is
// written as before (what older agents read).
TEST(AgentProtocol, AccountsApplyCarriesRemovalsOnlyWhenThereAreSome) {
  AgentRequest apply;
  apply.op = AgentOp::kAccountsApply;
  apply.users = {{"ada", {"ssh-ed25519 AAAA ada"}, true}};
  EXPECT_EQ(ToLine(apply).find("remove"), std::string::npos);
  apply.remove = {{"milo", false}, {"old", true}};
  EXPECT_NE(ToLine(apply).find(R"("remove":[{"name":"milo","purge":false},)"), std::string::npos)
      << ToLine(apply);
  Result<AgentRequest> back = ParseAgentRequest(ToLine(apply));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->remove.size(), 2u);
  EXPECT_EQ(back->remove[0].name, "milo");
  EXPECT_FALSE(back->remove[0].purge);
  EXPECT_TRUE(back->remove[1].purge);
  EXPECT_EQ(back->users.at(0).name, "ada");
  Result<AgentRequest> wrong =
      ParseAgentRequest(R"({"v":1,"op":"accounts.apply","users":[],"remove":[{"name":"x","purge":"yes"}]})");
  EXPECT_FALSE(wrong.ok());
}

TEST(AgentProtocol, Files) {
  ExpectGolden("src/api/testdata/agent_job.json", ToJson(Spec()) + "\n");
  ExpectGolden("src/api/testdata/agent_state.json", ToJson(Killed()) + "\n");
  Result<JobSpec> spec = ParseJobSpec(ToJson(Spec()));
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(ToJson(*spec), ToJson(Spec()));
  Result<JobOnWorker> state = ParseJobOnWorker(ToJson(Killed()));
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_EQ(ToJson(*state), ToJson(Killed()));
}

TEST(AgentProtocol, RequestsReadBack) {
  AgentRequest start;
  start.op = AgentOp::kJobStart;
  start.job = Spec();
  Result<AgentRequest> back = ParseAgentRequest(ToLine(start));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->op, AgentOp::kJobStart);
  EXPECT_EQ(ToJson(back->job), ToJson(Spec()));

  // `call --worker 3` adds the worker, which becomes the job's; unknown fields are
  // ignored.
  Result<std::string> with_worker =
      AddWorkerToRequest(R"({"v":1,"op":"job.start","job":{"id":"j1","command":"true"},)"
                         R"("from_the_future":{"x":1}})",
                         3);
  ASSERT_TRUE(with_worker.ok());
  Result<AgentRequest> worker = ParseAgentRequest(*with_worker);
  ASSERT_TRUE(worker.ok()) << worker.status().ToString();
  EXPECT_EQ(worker->job.worker, 3);
  EXPECT_EQ(worker->grace_seconds, 10);
}

TEST(AgentProtocol, AnswersReadBack) {
  Result<AgentLine> one = ParseAgentLine(AnswerLine({Status::Ok(), Waiting()}),
                                         AgentOp::kJobStart);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->kind, AgentLine::Kind::kAnswer);
  EXPECT_EQ(ToJson(std::get<JobOnWorker>(one->answer.body)), ToJson(Waiting()));

  Result<AgentLine> error =
      ParseAgentLine(AnswerLine({PermissionDeniedError("not yours"), {}}), AgentOp::kJobCancel);
  ASSERT_TRUE(error.ok());
  EXPECT_EQ(error->answer.status, PermissionDeniedError("not yours"));

  Result<AgentLine> data = ParseAgentLine(DataLine({"stdout", "hi\n"}), AgentOp::kJobLogs);
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(data->kind, AgentLine::Kind::kData);
  EXPECT_EQ(data->chunk.data, "hi\n");

  Result<AgentLine> state = ParseAgentLine(StateLine(Killed()), AgentOp::kJobWatch);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->kind, AgentLine::Kind::kState);
  EXPECT_EQ(state->state.signal, "TERM");

  Result<AgentLine> end = ParseAgentLine(EndLine(Status::Ok()), AgentOp::kJobWatch);
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(end->kind, AgentLine::Kind::kEnd);
  EXPECT_TRUE(end->answer.status.ok());

  // A refusal of a streaming request comes as its end; a code from a newer agent is
  // still a failure.
  Result<AgentLine> refused =
      ParseAgentLine(R"({"v":1,"ok":false,"error":{"code":"SOMETHING_NEW","message":"m"}})",
                     AgentOp::kJobLogs);
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->kind, AgentLine::Kind::kEnd);
  EXPECT_EQ(refused->answer.status, InternalError("m"));
}

// Each bad request gets one message naming what is wrong.
TEST(AgentProtocol, BadRequests) {
  struct Case {
    std::string line;
    StatusCode code;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {"not json", StatusCode::kInvalidArgument, "request is not a JSON object"},
           {"[1]", StatusCode::kInvalidArgument, "request is not a JSON object"},
           {R"({"op":"hello"})", StatusCode::kInvalidArgument,
            "request has no \"v\" (the protocol version; this agent speaks 1)"},
           {R"({"v":2,"op":"hello"})", StatusCode::kFailedPrecondition,
            "protocol version 2 is not spoken here: this agent speaks 1"},
           {R"({"v":1})", StatusCode::kInvalidArgument,
            "request has no \"op\"; one of hello, job.start, job.list, job.cancel, job.logs, "
            "job.watch, devices, doctor, accounts.apply, disks.mount, metrics, notice, "
            "notice.watch"},
           {R"({"v":1,"op":"job.explode"})", StatusCode::kInvalidArgument,
            "unknown op \"job.explode\"; this agent knows hello, job.start, job.list, "
            "job.cancel, job.logs, job.watch, devices, doctor, accounts.apply, disks.mount, "
            "metrics, notice, notice.watch"},
           {R"({"v":1,"op":"job.cancel","id":"j1","grace_seconds":"soon"})",
            StatusCode::kInvalidArgument,
            "job.cancel: \"grace_seconds\" is string, not an integer"},
           {R"({"v":1,"op":"job.start","job":{"id":"j1","command":"x","env":{"A":1}}})",
            StatusCode::kInvalidArgument, "job.start: \"job.env.A\" is number, not a string"},
           {R"({"v":1,"op":"job.start","job":{"id":"j1"}})", StatusCode::kInvalidArgument,
            "job.start needs job.id and job.command"},
           {R"({"v":1,"op":"job.logs"})", StatusCode::kInvalidArgument,
            "job.logs needs \"id\", the job's id"},
           {R"({"v":1,"op":"job.logs","id":"j1","tail":-1})", StatusCode::kInvalidArgument,
            "job.logs: \"grace_seconds\" and \"tail\" cannot be negative"},
           {R"({"v":1,"op":"job.watch","ids":[]})", StatusCode::kInvalidArgument,
            "job.watch needs \"ids\", the jobs to watch"},
           {R"({"v":1,"op":"job.list","ids":["j1",2]})", StatusCode::kInvalidArgument,
            "job.list: \"ids[1]\" is number, not a string"},
           {R"({"v":1,"op":"hello","worker":99999999999})", StatusCode::kInvalidArgument,
            "hello: \"worker\" is out of range"},
       }) {
    Result<AgentRequest> r = ParseAgentRequest(c.line);
    ASSERT_FALSE(r.ok()) << c.line;
    EXPECT_EQ(r.status(), Status(c.code, c.message)) << c.line;
  }
}

TEST(AgentProtocol, LinesAreBounded) {
  std::string big = R"({"v":1,"op":"hello","pad":")" + std::string(kMaxAgentLineBytes, 'x') +
                    "\"}";
  Result<AgentRequest> r = ParseAgentRequest(big);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "request of 1048605 bytes is over the limit of 1048576 bytes");
  EXPECT_FALSE(AddWorkerToRequest(big, 0).ok());
  EXPECT_FALSE(ParseAgentLine(big, AgentOp::kHello).ok());
  // An answer from an agent of another version is refused, not misread.
  Result<AgentLine> v2 = ParseAgentLine(R"({"v":2,"ok":true})", AgentOp::kHello);
  ASSERT_FALSE(v2.ok());
  EXPECT_EQ(v2.status().code(), StatusCode::kFailedPrecondition);
}

TEST(AgentProtocol, StateNames) {
  EXPECT_EQ(JobStateName(JobState::kWaiting), "waiting");
  EXPECT_EQ(JobStateFromName("lost"), JobState::kLost);
  EXPECT_FALSE(JobStateFromName("Running").has_value());
  EXPECT_TRUE(IsStreamingOp(AgentOp::kJobWatch));
  EXPECT_TRUE(IsStreamingOp(AgentOp::kNoticeWatch));
  EXPECT_FALSE(IsStreamingOp(AgentOp::kNotice));
  EXPECT_FALSE(IsStreamingOp(AgentOp::kJobCancel));
}

}  // namespace
}  // namespace tpufleet::api
