#include "ssh/fanout.h"

#include <map>

namespace tpufleet {
namespace {

// Fanout::Open's default: each job runs with Run (blocking) on the turn after Start.
class BlockingSession final : public FanoutSession {
 public:
  BlockingSession(Fanout& fanout, EventLoop& loop) : fanout_(fanout), loop_(loop) {}
  ~BlockingSession() override {
    for (const auto& [n, id] : timers_) {
      loop_.Remove(id);
    }
  }

  Status Start(const FanoutJob& job, FanoutSink& sink, Done done) override {
    uint64_t n = next_++;
    timers_[n] = loop_.After(std::chrono::nanoseconds(0), [this, n, job, &sink,
                                                           done = std::move(done)](
                                                              Clock::MonoTime) {
      timers_.erase(n);
      Status s = fanout_.Run(job, sink);
      if (!s.ok()) {
        // Run refused the job after Start said it would run: every host gets the reason.
        for (size_t i = 0; i < job.hosts.size(); ++i) {
          sink.OnResult(i, {HostOutcome::kUnreachable, 0, "", s.message()});
        }
      }
      done();
    });
    return Status::Ok();
  }

 private:
  Fanout& fanout_;
  EventLoop& loop_;
  uint64_t next_ = 0;
  std::map<uint64_t, EventLoop::Id> timers_;  // the jobs not run yet, in start order
};

}  // namespace

std::unique_ptr<FanoutSession> Fanout::Open(EventLoop& loop) {
  return std::make_unique<BlockingSession>(*this, loop);
}

std::string_view HostOutcomeName(HostOutcome outcome) {
  switch (outcome) {
    case HostOutcome::kExited: return "exited";
    case HostOutcome::kSignaled: return "signaled";
    case HostOutcome::kUnreachable: return "unreachable";
    case HostOutcome::kAuthFailed: return "auth-failed";
    case HostOutcome::kHostKeyMismatch: return "host-key-mismatch";
    case HostOutcome::kTimeout: return "timeout";
    case HostOutcome::kCancelled: return "cancelled";
  }
  return "unknown";
}

bool NeverConnected(const HostResult& result) {
  // The engine's messages for the stages before a channel opens (fanout_engine.cc).
  auto starts = [&](std::string_view prefix) {
    return result.message.compare(0, prefix.size(), prefix) == 0;
  };
  switch (result.outcome) {
    case HostOutcome::kUnreachable:
      return starts("connect: ") || starts("SSH handshake: ") || starts("SSH login: ");
    case HostOutcome::kTimeout:
      return starts("no SSH login within ");
    default:
      return false;
  }
}

}  // namespace tpufleet
