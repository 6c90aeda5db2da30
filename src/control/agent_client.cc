#include "control/agent_client.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "control/exec.h"
#include "control/resolve.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

// What the shell on the worker exits with when the binary is not there.
constexpr int kCommandNotFoundExit = 127;

// The first line of `text`, trimmed: what a failing `call`, sudo or shell said.
std::string FirstLine(std::string_view text) {
  text = Trim(text);
  return std::string(Trim(text.substr(0, text.find('\n'))));
}

// `/usr/local/bin/tpufleet-agent call --worker N`, behind `sudo -n` when `admin`.
std::string AgentCallCommand(int worker, bool admin) {
  return std::string(admin ? "sudo -n " : "") + std::string(api::kAgentBinaryPath) +
         " call --worker " + std::to_string(worker);
}

// Splits each worker's stdout into answer lines, parses them, and turns the fan-out's
// result into the worker's AgentReply.
class AgentSink final : public FanoutSink {
 public:
  AgentSink(const std::vector<WorkerTarget>& workers, const AgentCall& call,
            const AgentLineFn& on_line, const AgentCancelFn& cancelled)
      : workers_(workers), call_(call), on_line_(on_line), cancelled_(cancelled),
        state_(workers.size()) {}

  void OnOutput(size_t host, OutputStream stream, std::string_view data) override {
    Worker& w = state_[host];
    if (stream == OutputStream::kStderr) {
      size_t room = kAgentStderrKeepBytes - std::min(kAgentStderrKeepBytes, w.err.size());
      w.err.append(data.substr(0, room));
      return;
    }
    if (w.finished) {
      return;  // after the answer's last line (or an unreadable one) nothing counts
    }
    w.partial.append(data);
    size_t start = 0;
    for (size_t nl = w.partial.find('\n', w.scanned); nl != std::string::npos;
         nl = w.partial.find('\n', start)) {
      Line(host, std::string_view(w.partial).substr(start, nl - start));
      start = nl + 1;
      if (w.finished) {
        break;
      }
    }
    w.partial.erase(0, start);
    w.scanned = w.partial.size();
    if (!w.finished && w.partial.size() > api::kMaxAgentLineBytes) {
      Finish(w, InternalError("the agent on " + workers_[host].name +
                              " sent a line longer than the protocol allows"));
    }
  }

  void OnResult(size_t host, const HostResult& result) override {
    Worker& w = state_[host];
    // An answer that arrived whole stands, whatever happened to the connection after.
    if (!w.finished) {
      w.reply.status = Unanswered(workers_[host].name, result, w.err);
    }
  }

  bool Cancelled() override { return cancelled_ && cancelled_(); }

  std::vector<AgentReply> Replies() {
    std::vector<AgentReply> out;
    out.reserve(state_.size());
    for (Worker& w : state_) {
      out.push_back(std::move(w.reply));
    }
    return out;
  }

 private:
  struct Worker {
    std::string partial;   // stdout after the last complete line
    size_t scanned = 0;    // bytes of `partial` known to hold no newline
    std::string err;       // the first kAgentStderrKeepBytes of stderr
    bool finished = false;  // the answer's last line came, or one that cannot be read
    AgentReply reply;
  };

  void Finish(Worker& w, Status status) {
    w.finished = true;
    w.partial.clear();
    w.reply.status = std::move(status);
  }

  void Line(size_t host, std::string_view text) {
    Worker& w = state_[host];
    const std::string& name = workers_[host].name;
    Result<api::AgentLine> line = api::ParseAgentLine(text, call_.request.op);
    if (!line.ok()) {
      Finish(w, InternalError("the agent on " + name + " answered something unreadable (" +
                              line.status().message() + "): is its version the CLI's? " +
                              "run `tpufleet up`"));
      return;
    }
    switch (line->kind) {
      case api::AgentLine::Kind::kData:
      case api::AgentLine::Kind::kState:
      case api::AgentLine::Kind::kNotice:
        if (on_line_) {
          on_line_(host, *line);
        }
        return;
      case api::AgentLine::Kind::kAnswer:
      case api::AgentLine::Kind::kEnd: {
        api::AgentAnswer& answer = line->answer;
        w.reply.answered = true;
        w.reply.body = std::move(answer.body);
        Finish(w, answer.status.ok() ? Status::Ok() : answer.status.WithContext(name));
        return;
      }
    }
  }

  // Why worker `name` gave no answer, from how its `call` ended and what it said.
  Status Unanswered(const std::string& name, const HostResult& result,
                    const std::string& err) const {
    std::string said = FirstLine(err);
    switch (result.outcome) {
      case HostOutcome::kExited:
        break;
      case HostOutcome::kSignaled:
        return UnavailableError("tpufleet-agent call on " + name + " was killed by SIG" +
                                result.signal);
      case HostOutcome::kUnreachable:
        return UnavailableError(name + ": " + result.message);
      case HostOutcome::kAuthFailed:
        return PermissionDeniedError(name + ": " + result.message);
      case HostOutcome::kHostKeyMismatch:
        return FailedPreconditionError(name + ": " + result.message);
      case HostOutcome::kTimeout:
        return TimeoutError(name + ": " + result.message);
      case HostOutcome::kCancelled:
        return UnavailableError(name + ": cancelled");
    }
    if (result.exit_code == api::kAgentNotRunningExit) {
      return FailedPreconditionError("the agent is not running on " + name +
                                     ": run `tpufleet up`");
    }
    if (result.exit_code == kCommandNotFoundExit) {
      return FailedPreconditionError("tpufleet-agent is not installed on " + name +
                                     ": run `tpufleet up`");
    }
    if (call_.admin && StartsWith(said, "sudo:")) {
      return PermissionDeniedError(name + ": the login may not run the agent as root (" +
                                   said + ")");
    }
    if (result.exit_code == 0) {
      return InternalError("the agent on " + name + " ended without an answer");
    }
    return InternalError("tpufleet-agent call on " + name + " failed (exit " +
                         std::to_string(result.exit_code) + (said.empty() ? "" : ": " + said) +
                         ")");
  }

  const std::vector<WorkerTarget>& workers_;
  const AgentCall& call_;
  const AgentLineFn& on_line_;
  const AgentCancelFn& cancelled_;
  std::vector<Worker> state_;
};

}  // namespace

FanoutJob AgentJob(const World& world, const std::vector<WorkerTarget>& workers,
                   api::AgentRequest request, bool admin) {
  FanoutJob job = JobFor(world, workers);
  for (size_t i = 0; i < workers.size(); ++i) {
    FanoutHost& host = job.hosts[i];
    const int worker = workers[i].worker;
    host.command = AgentCallCommand(worker, admin);
    if (!admin) {  // root's calls go through sudo alone
      // Straight to the socket where the worker's sshd connects it: no process starts
      // on the worker for the call.
      request.worker = worker;
      host.unix_socket = std::string(api::kAgentSocketPath);
      host.socket_input = api::ToLine(request) + "\n";
    }
  }
  request.worker.reset();  // each worker's own, from `call --worker N`
  job.stdin_header = api::ToLine(request) + "\n";
  // The request is read as one line; the channel stays open, and its closing (this
  // process gone, Ctrl-C) tells the agent to stop following.
  job.hold_stdin = true;
  return job;
}

Result<std::vector<AgentReply>> CallAgents(World& world, const std::vector<WorkerTarget>& workers,
                                           const AgentCall& call, const AgentLineFn& on_line,
                                           const AgentCancelFn& cancelled) {
  if (workers.empty()) {
    return InvalidArgumentError("an agent call needs at least one worker");
  }
  if (api::IsStreamingOp(call.request.op) && !on_line) {
    return InvalidArgumentError(std::string(api::AgentOpName(call.request.op)) +
                                " streams: the call needs a line callback");
  }
  FanoutJob job = AgentJob(world, workers, call.request, call.admin);
  job.connect_timeout = call.connect_timeout;
  job.command_timeout = call.timeout;
  AgentSink sink(workers, call, on_line, cancelled);
  if (call.cold) {
    World cold{world.store,     world.clock, world.providers, world.ssh,
               world.local_fanout, world.local_fanout, world.keys, world.ssh_files,
               world.forwarder, world.paths, world.login};
    TPUFLEET_TRY(RunResolving(cold, workers, job, sink));
  } else {
    TPUFLEET_TRY(RunResolving(world, workers, job, sink));
  }
  return sink.Replies();
}

}  // namespace tpufleet
