#include "reconcile/notices.h"

#include <algorithm>

#include "control/agent_client.h"
#include "control/targets.h"
#include "util/log.h"

namespace tpufleet {

// One worker's notice.watch: the fan-out job's sink, and what the worker last said.
class NoticeWatch::Stream final : public FanoutSink {
 public:
  Stream(NoticeWatch& owner, WorkerTarget worker) : owner_(owner), target(std::move(worker)) {}

  void OnOutput(size_t, OutputStream stream, std::string_view data) override {
    if (stream != OutputStream::kStdout || closed) {
      return;
    }
    partial_.append(data);
    size_t start = 0;
    for (size_t nl = partial_.find('\n'); nl != std::string::npos;
         nl = partial_.find('\n', start)) {
      Line(std::string_view(partial_).substr(start, nl - start));
      start = nl + 1;
    }
    partial_.erase(0, start);
    if (partial_.size() > api::kMaxAgentLineBytes) {
      partial_.clear();  // a line no agent writes: drop it, the next one may be readable
    }
  }

  void OnResult(size_t, const HostResult& result) override {
    // A worker that could not be reached (cut off, rebooting, gone) is unreachable until
    // its stream is open again; one whose `call` ended (the agent restarted or gave the
    // stream up) keeps its last notice, still the latest word it gave.
    partial_.clear();
    if (!closed && result.outcome != HostOutcome::kExited) {
      unreachable = true;
      heard = false;
    }
  }

  bool Cancelled() override { return closed; }

  NoticeWatch& owner_;
  const WorkerTarget target;
  std::optional<api::AgentNotice> notice;  // the last notice line's
  bool unreachable = false;  // the stream broke (or never opened) and is not back yet
  bool closed = false;       // no longer watched: the job is being cancelled
  bool running = false;      // its fan-out job has started and not ended
  bool heard = false;        // a notice line came since it was last unreachable
  EventLoop::Id retry = 0;   // the timer that opens the stream again

 private:
  void Line(std::string_view text) {
    Result<api::AgentLine> line = api::ParseAgentLine(text, api::AgentOp::kNoticeWatch);
    if (!line.ok() || line->kind != api::AgentLine::Kind::kNotice) {
      // An old agent's "unknown op", or its end line: no notices from it until the
      // stream is opened again (after `up` installs a current agent).
      if (!line.ok() || !line->answer.status.ok()) {
        Log(LogLevel::kDebug,
            "notice.watch on " + target.name + ": " +
                (line.ok() ? line->answer.status.message() : line.status().message()));
      }
      return;
    }
    bool changed = unreachable || !notice.has_value() || !(*notice == line->notice);
    unreachable = false;
    heard = true;
    notice = line->notice;
    if (changed) {
      owner_.Changed(target.fleet, target.node);
    }
  }

  std::string partial_;  // stdout after the last complete line
};

NoticeWatch::NoticeWatch(World& world, EventLoop& loop, OnNotice on_notice)
    : world_(world), loop_(loop), on_notice_(std::move(on_notice)),
      session_(world.local_fanout.Open(loop)) {}

NoticeWatch::~NoticeWatch() {
  session_.reset();  // cancels every job before their sinks go
  for (auto& [key, s] : streams_) {
    loop_.Remove(s->retry);
  }
}

void NoticeWatch::Changed(const std::string& fleet, const std::string& node) {
  // Not from inside the sink: what serve does about it may close streams.
  loop_.After(std::chrono::nanoseconds::zero(),
              [this, fleet, node](Clock::MonoTime) { on_notice_(fleet, node); });
}

void NoticeWatch::Watch(const std::vector<NodeRecord>& nodes) {
  // One store read for every node (a pass at 256 nodes must not read it 256 times);
  // should one node's workers be unusable, the others are resolved one by one.
  std::vector<std::string> names;
  for (const NodeRecord& r : nodes) {
    names.push_back(r.name);
  }
  std::vector<WorkerTarget> targets;
  if (!names.empty()) {
    Result<std::vector<WorkerTarget>> all = ResolveTargets(world_.store, names);
    if (all.ok()) {
      targets = std::move(*all);
    } else {
      for (const std::string& name : names) {
        Result<std::vector<WorkerTarget>> one = ResolveTargets(world_.store, {name});
        if (one.ok()) {
          targets.insert(targets.end(), one->begin(), one->end());
        }
      }
    }
  }
  std::map<std::string, WorkerTarget> want;
  for (WorkerTarget& t : targets) {
    std::string key = t.fleet + "/" + t.node + "/" + std::to_string(t.worker) + "/" +
                      t.address + "/" + t.host_key;
    want.emplace(std::move(key), std::move(t));
  }
  for (auto it = streams_.begin(); it != streams_.end();) {
    if (want.count(it->first) > 0) {
      ++it;
      continue;
    }
    Stream& s = *it->second;
    loop_.Remove(s.retry);
    s.closed = true;
    if (s.running) {
      closing_.push_back(std::move(it->second));  // its job's end frees it
    }
    it = streams_.erase(it);
  }
  for (auto& [key, target] : want) {
    if (streams_.count(key) == 0) {
      auto s = std::make_unique<Stream>(*this, target);
      Stream& ref = *s;
      streams_.emplace(key, std::move(s));
      Open(ref);
    }
  }
}

void NoticeWatch::Open(Stream& s) {
  s.retry = 0;
  api::AgentRequest request;
  request.op = api::AgentOp::kNoticeWatch;
  FanoutJob job = AgentJob(world_, {s.target}, request, /*admin=*/false);
  job.connect_timeout = kNoticeConnectTimeout;
  Stream* raw = &s;
  Status started = session_->Start(job, s, [this, raw] { Ended(raw); });
  if (!started.ok()) {
    s.unreachable = true;
    s.retry = loop_.After(kNoticeRetry, [this, raw](Clock::MonoTime) { Open(*raw); });
    return;
  }
  s.running = true;
}

void NoticeWatch::Ended(Stream* s) {
  s->running = false;
  if (s->closed) {
    std::erase_if(closing_, [s](const std::unique_ptr<Stream>& c) { return c.get() == s; });
    return;
  }
  s->retry = loop_.After(kNoticeRetry, [this, s](Clock::MonoTime) { Open(*s); });
}

NodeNotices NoticeWatch::Of(const std::string& fleet, const std::string& node) const {
  NodeNotices out;
  for (const auto& [key, s] : streams_) {
    if (s->target.fleet != fleet || s->target.node != node) {
      continue;
    }
    ++out.workers;
    if (s->unreachable) {
      ++out.unreachable;
      continue;
    }
    if (s->heard) {
      ++out.answering;
    }
    if (!s->notice.has_value()) {
      continue;
    }
    if (s->notice->preempted) {
      ++out.preempted;
      Clock::WallTime since{std::chrono::milliseconds(s->notice->changed_unix_ms)};
      out.preempted_since = out.preempted_since ? std::min(*out.preempted_since, since) : since;
    }
    if (s->notice->maintenance_event != "NONE" && !s->notice->maintenance_event.empty()) {
      ++out.maintenance;
    }
  }
  return out;
}

}  // namespace tpufleet
