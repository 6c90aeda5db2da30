// The real tpufleet-agent's streams (job.logs --follow, job.watch), its rotated logs and
// its one-process-per-TPU queue (with the device guard looking at an empty host tree, so
// the machine's own TPU, if any, plays no part), and the host ops (doctor, devices, who
// may apply accounts).
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/stat.h>

#include "agent/attach.h"
#include "agent/host/tpu_verdict.h"
#include "agent/running_agent.h"
#include "agent/unix_socket.h"
#include "util/file.h"
#include "util/subprocess.h"

namespace tpufleet::agent {
namespace {

using api::AgentLine;
using api::AgentOp;
using api::AgentRequest;

// With inotify, and as a host that has no inotify instance to spare gets it (--watch
// poll): the same lines and states.
class AgentFollow : public ::testing::TestWithParam<const char*> {};

TEST_P(AgentFollow, GivesTheOutputAndTheStatesUntilTheEnd) {
  RunningAgent agent({"--watch", GetParam()});
  ASSERT_TRUE(agent.StartJob(RunningAgent::Job(
                                 "jfollowa", "for i in 1 2 3 4 5; do echo $i; sleep 0.2; done; exit 4"))
                  .status.ok());
  AgentRequest r;
  r.op = AgentOp::kJobLogs;
  r.id = "jfollowa";
  r.follow = true;
  std::vector<AgentLine> lines = RunningAgent::Lines(agent.Call(api::ToLine(r)), r.op);
  ASSERT_GE(lines.size(), 3u);
  std::string data;
  std::vector<JobState> states;
  for (const AgentLine& line : lines) {
    if (line.kind == AgentLine::Kind::kData) {
      data += line.chunk.data;
    } else if (line.kind == AgentLine::Kind::kState) {
      states.push_back(line.state.state);
    }
  }
  EXPECT_EQ(data, "1\n2\n3\n4\n5\n");
  ASSERT_FALSE(states.empty());
  EXPECT_EQ(states.front(), JobState::kRunning);
  EXPECT_EQ(states.back(), JobState::kFailed);
  EXPECT_EQ(lines.back().kind, AgentLine::Kind::kEnd);
  EXPECT_TRUE(lines.back().answer.status.ok());

  // After the end: at once, and the tail of it.
  EXPECT_EQ(agent.Logs("jfollowa", 2), "4\n5\n");
}

INSTANTIATE_TEST_SUITE_P(WatchModes, AgentFollow, ::testing::Values("inotify", "poll"));

TEST(AgentStreams, WatchEndsWhenEveryJobHasEnded) {
  RunningAgent agent;
  // The first job lives until the test lets it go, so the name clash below cannot race
  // its end on a slow (sanitized, loaded) machine.
  TempDir gate;
  ASSERT_EQ(chmod(gate.path().c_str(), 0755), 0);  // the job's user (nobody, as root) looks
  const std::string go = gate.path() + "/go";
  ASSERT_TRUE(agent
                  .StartJob(RunningAgent::Job(
                      "jwatchaa", "sleep 0.3; while [ ! -e '" + go + "' ]; do sleep 0.05; done"))
                  .status.ok());
  // The default name of this one is "sleep" too, which a live job has.
  api::AgentAnswer same_name = agent.StartJob(RunningAgent::Job("jwatchbb", "sleep 0.6; exit 2"));
  EXPECT_EQ(same_name.status.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(same_name.status.message(), "job jwatchaa is named sleep and has not ended");
  api::JobSpec second = RunningAgent::Job("jwatchbb", "sleep 0.6; exit 2");
  second.name = "second";
  ASSERT_TRUE(agent.StartJob(second).status.ok());
  ASSERT_TRUE(WriteFileAtomic(go, "").ok());
  AgentRequest r;
  r.op = AgentOp::kJobWatch;
  r.ids = {"jwatchaa", "jwatchbb"};
  std::vector<AgentLine> lines = RunningAgent::Lines(agent.Call(api::ToLine(r)), r.op);
  // Each job's state at once and then its end (one line when it had ended before the
  // watch began, as on a slow machine), the end line last.
  ASSERT_GE(lines.size(), 3u);
  std::map<std::string, JobState> last;
  for (const AgentLine& line : lines) {
    if (line.kind == AgentLine::Kind::kState) {
      last[line.state.id] = line.state.state;
    }
  }
  EXPECT_EQ(last["jwatchaa"], JobState::kSucceeded);
  EXPECT_EQ(last["jwatchbb"], JobState::kFailed);
  EXPECT_EQ(lines.back().kind, AgentLine::Kind::kEnd);

  r.ids = {"jwatchaa", "jmissing"};
  std::vector<AgentLine> missing = RunningAgent::Lines(agent.Call(api::ToLine(r)), r.op);
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].answer.status, NotFoundError("no job jmissing on this worker"));
}

TEST(AgentStreams, LogsAreRotatedAtTheSizeServeIsGiven) {
  RunningAgent agent({"--log-bytes", "1000"});
  // 300 lines of 10 bytes: 3000 bytes, rotated twice; all kept (4 files of 1000).
  ASSERT_TRUE(agent.StartJob(RunningAgent::Job("jrotatea", "seq 100001 100300 | sed 's/^/L/'"))
                  .status.ok());
  agent.WaitEnded("jrotatea");
  std::string dir = JobDir(agent.StateDir(), "jrotatea");
  struct stat st {};
  ASSERT_EQ(stat((dir + "/stdout.log.2").c_str(), &st), 0);
  EXPECT_LE(st.st_size, 1000);
  std::string all = agent.Logs("jrotatea");
  EXPECT_EQ(all.size(), 300u * 8);
  EXPECT_EQ(all.substr(0, 8), "L100001\n");
  EXPECT_EQ(agent.Logs("jrotatea", 3), "L100298\nL100299\nL100300\n");
}

// A second accelerator job waits for the first (or, with no_wait, is refused naming
// it), and starts when the first ends.
TEST(AgentTpu, OneAcceleratorJobAtATime) {
  TempDir host;
  RunningAgent agent({"--host-root", host.path()});
  api::JobSpec first = RunningAgent::Job("jtpufirs", "sleep 1");
  first.accelerator = true;
  ASSERT_TRUE(agent.StartJob(first).status.ok());
  api::JobOnWorker running = agent.WaitFor("jtpufirs", [](const api::JobOnWorker& j) {
    return j.state == JobState::kRunning;
  });

  api::JobSpec refused = RunningAgent::Job("jtpunowa", "true");
  refused.accelerator = true;
  refused.no_wait = true;
  api::AgentAnswer no = agent.StartJob(refused);
  EXPECT_EQ(no.status, FailedPreconditionError("the TPU is held by job jtpufirs (pid " +
                                               std::to_string(running.pid) + ", user " +
                                               running.user + ": sleep 1) (no_wait)"));
  EXPECT_FALSE(agent.Job("jtpunowa").state == JobState::kRunning);

  api::JobSpec second = RunningAgent::Job("jtpuseco", "echo second");
  second.accelerator = true;
  api::AgentAnswer waits = agent.StartJob(second);
  ASSERT_TRUE(waits.status.ok()) << waits.status.ToString();
  const auto& waiting = std::get<api::JobOnWorker>(waits.body);
  EXPECT_EQ(waiting.state, JobState::kWaiting);
  ASSERT_TRUE(waiting.waiting_for.has_value());
  EXPECT_EQ(waiting.waiting_for->job, "jtpufirs");

  // A plain job is never held up by the TPU.
  ASSERT_TRUE(agent.StartJob(RunningAgent::Job("jplainaa", "true")).status.ok());
  EXPECT_EQ(agent.WaitEnded("jplainaa").state, JobState::kSucceeded);

  api::JobOnWorker done = agent.WaitEnded("jtpuseco");
  EXPECT_EQ(done.state, JobState::kSucceeded);
  EXPECT_GE(done.started_unix_ms, agent.Job("jtpufirs").ended_unix_ms);
  EXPECT_EQ(agent.Logs("jtpuseco"), "second\n");
}

TEST(AgentTpu, AStaleLockfileIsRemovedAndTheLogSaysSo) {
  TempDir host;
  std::string lockfile = host.Write("tmp/libtpu_lockfile", "");
  RunningAgent agent({"--host-root", host.path()});
  api::JobSpec job = RunningAgent::Job("jstaleaa", "echo ran");
  job.accelerator = true;
  ASSERT_TRUE(agent.StartJob(job).status.ok());
  agent.WaitEnded("jstaleaa");
  EXPECT_EQ(agent.Logs("jstaleaa"), "ran\n" + host::StaleLockfileLine() + "\n");
  struct stat st {};
  EXPECT_NE(stat(lockfile.c_str(), &st), 0);
}

TEST(AgentTpu, AWaitingJobIsCancelledAtOnce) {
  TempDir host;
  RunningAgent agent({"--host-root", host.path()});
  api::JobSpec first = RunningAgent::Job("jholdera", "sleep 30");
  first.accelerator = true;
  api::JobSpec second = RunningAgent::Job("jwaitera", "true");
  second.accelerator = true;
  ASSERT_TRUE(agent.StartJob(first).status.ok());
  ASSERT_EQ(std::get<api::JobOnWorker>(agent.StartJob(second).body).state, JobState::kWaiting);
  AgentRequest cancel;
  cancel.op = AgentOp::kJobCancel;
  cancel.id = "jwaitera";
  api::AgentAnswer a = agent.Ask(cancel);
  ASSERT_TRUE(a.status.ok());
  EXPECT_EQ(std::get<api::JobOnWorker>(a.body).state, JobState::kCancelled);
  EXPECT_EQ(std::get<api::JobOnWorker>(a.body).pid, 0);
}

}  // namespace
}  // namespace tpufleet::agent

namespace tpufleet::agent {
namespace {

// doctor runs the host's checks (agent/host/doctor_checks.h); here no metadata server
// answers (GCE_METADATA_IP points at a closed port), and the check says so.
TEST(AgentHostOps, DoctorAndDevicesAnswer) {
  TempDir host;
  setenv("GCE_METADATA_IP", "127.0.0.1:9", 1);
  RunningAgent agent({"--host-root", host.path()});
  unsetenv("GCE_METADATA_IP");
  AgentRequest r;
  r.op = AgentOp::kDoctor;
  api::AgentAnswer a = agent.Ask(r);
  ASSERT_TRUE(a.status.ok()) << a.status.ToString();
  const auto& report = std::get<api::DoctorReport>(a.body);
  std::map<std::string, bool> ok;
  for (const api::DoctorCheck& check : report.checks) {
    ok[check.name] = check.ok;
  }
  EXPECT_TRUE(ok.at("accelerators"));  // none expected, none there
  EXPECT_TRUE(ok.at("tpu_use"));
  EXPECT_FALSE(ok.at("metadata"));
  EXPECT_GT(report.time_unix_ms, 0);

  r.op = AgentOp::kDevices;
  a = agent.Ask(r);
  ASSERT_TRUE(a.status.ok()) << a.status.ToString();
  EXPECT_TRUE(std::get<api::DevicesReport>(a.body).devices.empty());
  EXPECT_FALSE(std::get<api::DevicesReport>(a.body).lockfile.present);
}

TEST(AgentHostOps, AccountsAreForRootAlone) {
  if (auto why = NobodySkipReason()) {
    GTEST_SKIP() << *why;
  }
  RunningAgent agent;
  AgentRequest r;
  r.op = AgentOp::kAccountsApply;
  r.users = {{"mallory", {}, true}};
  EXPECT_EQ(agent.Ask(r, /*as_nobody=*/true).status,
            PermissionDeniedError("accounts.apply is for root (sudo -n tpufleet-agent call)"));
  // Mounting (and formatting a blank disk) is root's too.
  r = AgentRequest{};
  r.op = AgentOp::kDisksMount;
  r.mounts = {{"data", "/mnt/data", false}};
  EXPECT_EQ(agent.Ask(r, /*as_nobody=*/true).status,
            PermissionDeniedError("disks.mount is for root (sudo -n tpufleet-agent call)"));
}

}  // namespace
}  // namespace tpufleet::agent

namespace tpufleet::agent {
namespace {

// A job on a terminal: `attach` types into it and shows what it prints, Ctrl-] leaves it
// running, and its output is in its log as well.
TEST(AgentAttach, TypesIntoTheJobsTerminalAndDetaches) {
  RunningAgent agent;
  api::JobSpec spec = RunningAgent::Job("jattacha", "read line; echo got:$line; sleep 0.5");
  spec.pty = true;
  ASSERT_TRUE(agent.StartJob(spec).status.ok());
  Result<ProgramResult> attached = RunSubprocess(
      {TPUFLEET_AGENT_BINARY, "attach", "jattacha", "--attach-dir", agent.dir().Path("run/attach")},
      std::string("hello\n") + kDetachKey, std::chrono::seconds(10), SpawnOptions{});
  ASSERT_TRUE(attached.ok()) << attached.status().ToString();
  EXPECT_EQ(attached->exit_code, 0) << attached->output;
  EXPECT_NE(attached->output.find("attached to job jattacha; Ctrl-] detaches"), std::string::npos)
      << attached->output;
  api::JobOnWorker done = agent.WaitEnded("jattacha");
  EXPECT_EQ(done.state, JobState::kSucceeded);
  EXPECT_NE(agent.Logs("jattacha").find("got:hello"), std::string::npos) << agent.Logs("jattacha");

  // Nothing to attach to any more.
  Result<ProgramResult> late = RunSubprocess(
      {TPUFLEET_AGENT_BINARY, "attach", "jattacha", "--attach-dir", agent.dir().Path("run/attach")},
      "", std::chrono::seconds(10), SpawnOptions{});
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(late->exit_code, 1);
  EXPECT_NE(late->output.find("job jattacha has no terminal to attach to on this worker"),
            std::string::npos)
      << late->output;
}

}  // namespace
}  // namespace tpufleet::agent

namespace tpufleet::agent {
namespace {

// The terminal of root's job is not nobody's: its socket refuses them.
TEST(AgentAttach, AnotherUserCannotAttach) {
  if (auto why = NobodySkipReason()) {
    GTEST_SKIP() << *why;
  }
  RunningAgent agent;
  api::JobSpec spec = RunningAgent::Job("jrootpty", "sleep 30");
  spec.user = "root";
  spec.pty = true;
  ASSERT_TRUE(agent.StartJob(spec).status.ok());
  std::string path = AttachSocketPath(agent.dir().Path("run/attach"), "jrootpty");
  Result<sockaddr_un> addr = UnixAddress(path);
  ASSERT_TRUE(addr.ok());
  int connected = RunAsNobody([&] {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    return connect(fd, reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) == 0 ? 1 : 0;
  });
  EXPECT_EQ(connected, 0);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

}  // namespace
}  // namespace tpufleet::agent
