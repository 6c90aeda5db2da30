// RunningAgent: the real `tpufleet-agent serve` on a socket and a state directory of a
// temporary directory, for the agent's tests, and `tpufleet-agent call` to talk to it
// (as this process's user, or as nobody). Everything it started (serve, the keepers, the
// jobs' process groups) is killed and its directory removed when it is destroyed, also
// when a test fails half way. Include in tests only: the test target defines
// TPUFLEET_AGENT_BINARY, the binary's path.
//
// Thread-safety: one test's thread.
#pragma once

#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "agent/job_dir.h"
#include "api/agent.h"
#include "util/file.h"
#include "util/testing/as_nobody.h"
#include "util/testing/temp_dir.h"

namespace tpufleet::agent {

/// What a `call` left: its exit status and its stdout and stderr together.
struct CallOutput {
  int exit_code = -1;
  std::string output;
};

class RunningAgent {
 public:
  /// Starts serve with `serve_args` added (--log-bytes 1000, say).
  explicit RunningAgent(std::vector<std::string> serve_args = {})
      : serve_args_(std::move(serve_args)) {
    chmod(dir_.path().c_str(), 0755);  // nobody's call must reach the socket below
    Start();
  }
  ~RunningAgent() {
    Stop();
    for (const std::string& id : ListJobIds(StateDir())) {
      std::string job_dir = JobDir(StateDir(), id);
      Result<api::JobOnWorker> state = ReadJobState(job_dir);
      if (state.ok() && state->pid > 0 && !IsEnded(state->state)) {
        kill(-state->pid, SIGKILL);
      }
      if (pid_t keeper = KeeperPid(job_dir); keeper > 0) {
        kill(-keeper, SIGKILL);
      }
    }
  }
  RunningAgent(const RunningAgent&) = delete;
  RunningAgent& operator=(const RunningAgent&) = delete;

  std::string Socket() const { return dir_.Path("run/agent.sock"); }
  std::string StateDir() const { return dir_.Path("state"); }
  const TempDir& dir() const { return dir_; }

  /// Starts serve and waits until it answers hello.
  void Start() {
    std::vector<std::string> argv = {TPUFLEET_AGENT_BINARY, "serve", "--socket", Socket(),
                                     "--state-dir", StateDir()};
    argv.insert(argv.end(), serve_args_.begin(), serve_args_.end());
    serve_ = Spawn(argv, "", -1, nullptr);
    for (int i = 0; i < 200; ++i) {
      if (Call(R"({"v":1,"op":"hello"})").exit_code == 0) {
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "serve did not answer on " << Socket();
  }
  /// Ends serve with `sig` and reaps it; its jobs go on.
  void Stop(int sig = SIGTERM) {
    if (serve_ > 0) {
      kill(serve_, sig);
      waitpid(serve_, nullptr, 0);
      serve_ = 0;
    }
  }

  /// `tpufleet-agent call ARGS --socket SOCKET` with `line` on stdin; as nobody when
  /// `as_nobody` (REQUIRES: NobodySkipReason() is nullopt).
  CallOutput Call(const std::string& line, std::vector<std::string> args = {},
                  bool as_nobody = false) const {
    std::vector<std::string> argv = {TPUFLEET_AGENT_BINARY, "call", "--socket", Socket()};
    argv.insert(argv.end(), args.begin(), args.end());
    CallOutput out;
    int status = 0;
    pid_t pid = Spawn(argv, line + "\n", as_nobody ? 1 : 0, &out.output);
    waitpid(pid, &status, 0);
    out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return out;
  }

  /// The lines of an answer to a request of `op`, each parsed (a test fails on one that
  /// does not parse).
  static std::vector<api::AgentLine> Lines(const CallOutput& out, api::AgentOp op) {
    std::vector<api::AgentLine> lines;
    size_t start = 0;
    for (size_t nl; (nl = out.output.find('\n', start)) != std::string::npos; start = nl + 1) {
      Result<api::AgentLine> line = api::ParseAgentLine(out.output.substr(start, nl - start), op);
      EXPECT_TRUE(line.ok()) << line.status().ToString() << " in " << out.output;
      if (line.ok()) {
        lines.push_back(std::move(*line));
      }
    }
    return lines;
  }

  /// The one answer to `request`.
  api::AgentAnswer Ask(const api::AgentRequest& request, bool as_nobody = false) const {
    CallOutput out = Call(api::ToLine(request), {}, as_nobody);
    std::vector<api::AgentLine> lines = Lines(out, request.op);
    EXPECT_EQ(lines.size(), 1u) << out.output;
    return lines.empty() ? api::AgentAnswer{InternalError("no answer"), {}} : lines.back().answer;
  }

  /// A job that runs `command` as nobody (as this user when not root), in /tmp.
  static api::JobSpec Job(const std::string& id, const std::string& command) {
    api::JobSpec spec;
    spec.id = id;
    spec.command = command;
    spec.user = geteuid() == 0 ? "nobody" : "";
    spec.workdir = "/tmp";
    spec.topology.worker_addresses = {"127.0.0.1"};
    return spec;
  }

  /// Starts `spec`; the answer's status and job.
  api::AgentAnswer StartJob(const api::JobSpec& spec) const {
    api::AgentRequest r;
    r.op = api::AgentOp::kJobStart;
    r.job = spec;
    return Ask(r);
  }

  /// The job as job.list says.
  api::JobOnWorker Job(const std::string& id) const {
    api::AgentRequest r;
    r.op = api::AgentOp::kJobList;
    r.ids = {id};
    api::AgentAnswer a = Ask(r);
    const auto* jobs = std::get_if<std::vector<api::JobOnWorker>>(&a.body);
    return jobs != nullptr && jobs->size() == 1 ? jobs->front() : api::JobOnWorker{};
  }

  /// Waits (up to 20 s) until the job is in a state `done` accepts; the job then.
  template <typename Done>
  api::JobOnWorker WaitFor(const std::string& id, Done done) const {
    api::JobOnWorker job;
    for (int i = 0; i < 400; ++i) {
      job = Job(id);
      if (done(job)) {
        return job;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "job " << id << " stayed " << api::ToJson(job);
    return job;
  }
  api::JobOnWorker WaitEnded(const std::string& id) const {
    return WaitFor(id, [](const api::JobOnWorker& j) { return IsEnded(j.state); });
  }

  /// The data of job.logs for `id` (both streams, stdout first), and its last line.
  std::string Logs(const std::string& id, std::optional<int64_t> tail = std::nullopt) const {
    api::AgentRequest r;
    r.op = api::AgentOp::kJobLogs;
    r.id = id;
    r.tail = tail;
    std::string data;
    for (const api::AgentLine& line : Lines(Call(api::ToLine(r)), r.op)) {
      data += line.chunk.data;
    }
    return data;
  }

 private:
  // fork and exec `argv` with `input` on its stdin; as nobody when `user` is 1; its
  // output into *output (read to its end) when given, else to /dev/null.
  static pid_t Spawn(const std::vector<std::string>& argv, const std::string& input, int user,
                     std::string* output) {
    int in[2];
    int out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
      return -1;
    }
    std::optional<NobodyIds> nobody = user == 1 ? LookUpNobody() : std::nullopt;
    pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      int devnull = open("/dev/null", O_WRONLY);
      dup2(in[0], 0);
      dup2(output != nullptr ? out[1] : devnull, 1);
      dup2(output != nullptr ? out[1] : devnull, 2);
      if (nobody && (setgroups(0, nullptr) != 0 || setgid(nobody->gid) != 0 ||
                     setuid(nobody->uid) != 0)) {
        _exit(125);
      }
      std::vector<char*> args;
      for (const std::string& a : argv) {
        args.push_back(const_cast<char*>(a.c_str()));
      }
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    if (!input.empty()) {
      (void)!write(in[1], input.data(), input.size());
    }
    if (output != nullptr) {
      *output = ReadToEof(out[0]);
    }
    close(in[1]);  // after the output: `call` reads its line and must not see the end
    close(out[0]);
    return pid;
  }

  std::vector<std::string> serve_args_;
  TempDir dir_;
  pid_t serve_ = 0;
};

}  // namespace tpufleet::agent
