// FakeAgents: the node agents of a TestWorld's workers, answering `tpufleet-agent call`
// through its FakeFanout as the real ones answer over their sockets
// (docs/agent-protocol.md): the request is read from the job's stdin_header with
// api::ParseAgentRequest and answered with api/agent.h's own lines, so a test of
// control/agent_client or control/jobs checks the bytes a real agent would get and
// reads back what a real one would send.
//
// Each worker (by its name, "pod/w2") keeps its jobs. job.start records a job (state
// `start_state`, or what `on_start` makes of it; a restart replaces the job's record); job.list, job.cancel (a running job
// becomes cancelled, signal TERM), job.logs (each stream's text, then the end line) and
// job.watch (one state line per job, then the end: a test moves the states on itself)
// work on them; `metrics` answers the worker's `metrics` report, or "unknown op" as an
// agent from before the op does when the test set none. A worker can be without a running agent (`call` exits 3), without
// the binary (127) or unreachable; a workdir named in `missing_workdirs` is refused
// as the real agent refuses it.
//
// Calls made while another is being answered (the gang rule's cancel during a watch)
// are answered too: the fake keeps the index of the job it answers.
//
// Thread-safety: one test thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/agent.h"
#include "ssh/testing/fake_fanout.h"
#include "util/strings.h"

namespace tpufleet::testing {

/// A `metrics` answer of a worker whose 4 chips (8 of 32 GiB HBM each) ran at `duty` %
/// for the last minute, held by job `job` of alice (none: "", the worker then unused
/// for an hour), with its host's CPU at the job's limit when `input_bound` (its queue
/// empty in the window) or at 20 %. As of `now_ms`.
inline MetricsReport WorkerReport(int64_t now_ms, double duty, const std::string& job,
                                  bool input_bound = false) {
  MetricsReport r;
  r.sample.time_unix_ms = now_ms;
  for (int c = 0; c < 4; ++c) {
    ChipSample chip;
    chip.index = c;
    chip.kind = "tpu";
    chip.device = "/dev/accel" + std::to_string(c);
    chip.duty_cycle_percent = duty;
    chip.hbm_used_bytes = int64_t{8} << 30;
    chip.hbm_total_bytes = int64_t{32} << 30;
    if (!job.empty()) {
      chip.holders.push_back({4242, "alice", "python3 train.py", job});
    }
    r.sample.chips.push_back(chip);
  }
  r.sample.host.cpus = 8;
  r.sample.host.cpu_percent = input_bound ? 99 : 20;
  r.sample.host.memory_used_bytes = int64_t{10} << 30;
  r.sample.host.memory_total_bytes = int64_t{40} << 30;
  if (!job.empty()) {
    r.sample.jobs.push_back({job, "alice", input_bound ? 99.0 : 20.0, 100, 99, 1 << 30});
  }
  r.window.seconds = 60;
  r.window.samples = 60;
  r.window.duty_cycle_percent = duty;
  r.window.hlo_queue = input_bound ? 0 : 3;
  r.window.input_bound_fraction = input_bound ? 0.9 : 0;
  r.window.job = job;
  r.window.idle_since_unix_ms = job.empty() ? now_ms - 3'600'000 : 0;
  return r;
}

class FakeAgents {
 public:
  struct Worker {
    bool agent_running = true;  // false: `call` exits 3
    bool installed = true;      // false: the shell's 127
    bool unreachable = false;   // the SSH connection fails
    std::vector<api::JobOnWorker> jobs;
    std::map<std::string, std::string> stdout_text;  // by job id
    std::map<std::string, std::string> stderr_text;  // by job id
    std::optional<MetricsReport> metrics;  // the metrics op's answer; none: "unknown op"
  };
  struct Call {
    std::string worker;  // "pod/w2"
    std::string command;  // the host's command line
    api::AgentRequest request;
  };

  explicit FakeAgents(FakeFanout& fanout) : fanout_(fanout) {
    fanout_.respond = [this](const FanoutHost& host, size_t index, FanoutSink& sink) {
      size_t answering = fanout_.answering;
      HostResult r = Answer(host, index, sink);
      fanout_.answering = answering;  // a call made from the sink answered another job
      return r;
    };
  }

  /// The state a started job gets (running: it was started; waiting: the TPU is held).
  JobState start_state = JobState::kRunning;
  /// Workdirs that do not exist on any worker.
  std::set<std::string> missing_workdirs;
  /// The time a job started now gets (Unix ms); a test moves it on.
  int64_t now_ms = 1'767'225'600'000;  // 2026-01-01T00:00:00Z
  /// Called for each job a worker starts (not for dry runs), to make of it what the test
  /// needs: an exit, some output (worker(name).stdout_text[job.id]).
  std::function<void(const std::string& worker, api::JobOnWorker& job)> on_start;
  /// Workers that refuse the real start (not the dry run) with this error: the TPU
  /// held there, with no_wait.
  std::map<std::string, Status> refuse_start;

  Worker& worker(const std::string& name) { return workers_[name]; }
  const std::vector<Call>& calls() const { return calls_; }
  /// The calls of `op`, in order.
  std::vector<Call> CallsOf(api::AgentOp op) const {
    std::vector<Call> out;
    for (const Call& c : calls_) {
      if (c.request.op == op) {
        out.push_back(c);
      }
    }
    return out;
  }
  /// Job `id` on worker `name`; a default job when there is none (and the test fails).
  api::JobOnWorker& Job(const std::string& name, const std::string& id) {
    for (api::JobOnWorker& j : workers_[name].jobs) {
      if (j.id == id) {
        return j;
      }
    }
    ADD_FAILURE() << "no job " << id << " on " << name;
    static api::JobOnWorker none;
    return none;
  }
  /// Puts a job on worker `name` as if it had been started there.
  void Put(const std::string& name, api::JobOnWorker job) {
    workers_[name].jobs.push_back(std::move(job));
  }
  /// Ends job `id` on `name` with `exit_code` (succeeded for 0, failed otherwise).
  void End(const std::string& name, const std::string& id, int exit_code, int64_t at_ms = 0) {
    api::JobOnWorker& j = Job(name, id);
    j.exit_code = exit_code;
    j.state = exit_code == 0 ? JobState::kSucceeded : JobState::kFailed;
    j.ended_unix_ms = at_ms;
  }

 private:
  static void Send(FanoutSink& sink, size_t index, const std::string& line) {
    sink.OnOutput(index, OutputStream::kStdout, line + "\n");
  }

  HostResult Answer(const FanoutHost& host, size_t index, FanoutSink& sink) {
    const FanoutJob& job = fanout_.jobs[fanout_.answering];
    Worker& w = workers_[host.name];
    HostResult r;
    if (w.unreachable) {
      r.outcome = HostOutcome::kUnreachable;
      r.message = "connect to " + host.address + " port 22: No route to host";
      return r;
    }
    if (!w.installed) {
      sink.OnOutput(index, OutputStream::kStderr,
                    "bash: /usr/local/bin/tpufleet-agent: No such file or directory\n");
      r.exit_code = 127;
      return r;
    }
    if (!w.agent_running) {
      sink.OnOutput(index, OutputStream::kStderr, "tpufleet-agent: the agent is not running\n");
      r.exit_code = api::kAgentNotRunningExit;
      return r;
    }
    std::string line = job.stdin_header.substr(0, job.stdin_header.find('\n'));
    Result<api::AgentRequest> request = api::ParseAgentRequest(line);
    if (!request.ok()) {
      ADD_FAILURE() << "a request the agent cannot read: " << request.status().ToString();
      r.exit_code = 2;
      return r;
    }
    std::string command = host.command.empty() ? job.command : host.command;
    size_t at = command.rfind("--worker ");
    long long worker = 0;
    if (at == std::string::npos || !ParseInt(command.substr(at + 9), &worker)) {
      ADD_FAILURE() << "no --worker in " << command;
    }
    request->worker = static_cast<int>(worker);
    calls_.push_back({host.name, command, *request});
    Respond(host.name, w, *request, sink, index);
    return r;
  }

  void Respond(const std::string& name, Worker& w, const api::AgentRequest& q, FanoutSink& sink,
               size_t index) {
    api::AgentAnswer a;
    switch (q.op) {
      case api::AgentOp::kJobStart: {
        if (missing_workdirs.count(q.job.workdir) > 0) {
          a.status = InvalidArgumentError("the workdir " + q.job.workdir + " does not exist");
          break;
        }
        if (auto refused = refuse_start.find(name); refused != refuse_start.end() && !q.dry_run) {
          a.status = refused->second;
          break;
        }
        api::JobOnWorker j;
        j.id = q.job.id;
        j.name = q.job.name;
        j.user = q.job.user.empty() ? "tester" : q.job.user;  // as the agent names it
        j.command = q.job.command;
        j.worker = q.worker.value_or(0);
        j.state = q.dry_run ? JobState::kStarting : start_state;
        j.started_by = q.job.started_by;
        j.keep_going = q.job.keep_going;
        j.world_size = static_cast<int>(q.job.topology.worker_addresses.size());
        j.restarts = q.job.restarts;
        j.created_unix_ms = now_ms;
        j.started_unix_ms = j.state == JobState::kRunning ? now_ms : 0;
        if (!q.dry_run) {
          if (on_start) {
            on_start(name, j);
          }
          // A restart (a larger `restarts`) is the same job again: its record is replaced.
          std::erase_if(w.jobs, [&](const api::JobOnWorker& old) { return old.id == j.id; });
          w.jobs.push_back(j);
        }
        a.body = j;
        break;
      }
      case api::AgentOp::kJobList: {
        std::vector<api::JobOnWorker> jobs;
        for (const api::JobOnWorker& j : w.jobs) {
          if (q.ids.empty() || std::count(q.ids.begin(), q.ids.end(), j.id) > 0) {
            jobs.push_back(j);
          }
        }
        a.body = jobs;
        break;
      }
      case api::AgentOp::kJobCancel: {
        api::JobOnWorker* j = Find(w, q.id);
        if (j == nullptr) {
          a.status = NotFoundError("no job " + q.id);
          break;
        }
        if (!IsEnded(j->state)) {
          j->state = JobState::kCancelled;
          j->signal = "TERM";
        }
        a.body = *j;
        break;
      }
      case api::AgentOp::kJobLogs: {
        api::JobOnWorker* j = Find(w, q.id);
        if (j == nullptr) {
          Send(sink, index, api::EndLine(NotFoundError("no job " + q.id)));
          return;
        }
        for (const auto& [stream, text] : {std::pair{"stdout", w.stdout_text[q.id]},
                                           std::pair{"stderr", w.stderr_text[q.id]}}) {
          if (!text.empty()) {
            Send(sink, index, api::DataLine({stream, text}));
          }
        }
        if (q.follow) {
          Send(sink, index, api::StateLine(*j));
        }
        Send(sink, index, api::EndLine(Status::Ok()));
        return;
      }
      case api::AgentOp::kJobWatch: {
        for (const std::string& id : q.ids) {
          if (api::JobOnWorker* j = Find(w, id)) {
            Send(sink, index, api::StateLine(*j));
          }
        }
        Send(sink, index, api::EndLine(Status::Ok()));
        return;
      }
      case api::AgentOp::kMetrics:
        if (!w.metrics.has_value()) {
          a.status = InvalidArgumentError("unknown op \"metrics\"");
          break;
        }
        a.body = *w.metrics;
        break;
      default:
        a.status = InternalError("the fake agent does not answer this op");
        break;
    }
    Send(sink, index, api::AnswerLine(a));
  }

  static api::JobOnWorker* Find(Worker& w, const std::string& id) {
    for (api::JobOnWorker& j : w.jobs) {
      if (j.id == id) {
        return &j;
      }
    }
    return nullptr;
  }

  FakeFanout& fanout_;
  std::map<std::string, Worker> workers_;
  std::vector<Call> calls_;
};

}  // namespace tpufleet::testing
