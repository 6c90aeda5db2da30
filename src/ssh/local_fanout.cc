// LocalFanout: the fan-out engine in this process, on a loop of its own (Run) or on the
// caller's (Open).
#include <map>
#include <memory>
#include <vector>

#include "ssh/fanout_engine.h"

namespace tpufleet {

namespace {

// LocalFanout::Open's session: one engine on the caller's loop; a turn-end hook (added
// after the engine's, so it runs after the engine forgot what finished) calls back.
class EngineSession final : public FanoutSession {
 public:
  explicit EngineSession(EventLoop& loop)
      : loop_(loop), engine_(loop),
        turn_end_(loop.AtTurnEnd([this](Clock::MonoTime) { CallBack(); })) {}
  ~EngineSession() override { loop_.Remove(turn_end_); }

  Status Start(const FanoutJob& job, FanoutSink& sink, Done done) override {
    TPUFLEET_ASSIGN_OR_RETURN(FanoutEngine::JobId id, engine_.Start(job, sink));
    running_.emplace(id, std::move(done));
    return Status::Ok();
  }

 private:
  void CallBack() {
    std::vector<Done> over;  // taken out first: a callback may start the next job
    for (auto it = running_.begin(); it != running_.end();) {
      if (engine_.Finished(it->first)) {
        over.push_back(std::move(it->second));
        it = running_.erase(it);
      } else {
        ++it;
      }
    }
    for (Done& d : over) {
      d();
    }
  }

  EventLoop& loop_;
  FanoutEngine engine_;
  EventLoop::Id turn_end_;
  std::map<FanoutEngine::JobId, Done> running_;
};

}  // namespace

std::unique_ptr<FanoutSession> LocalFanout::Open(EventLoop& loop) {
  return std::make_unique<EngineSession>(loop);
}

Status LocalFanout::Run(const FanoutJob& job, FanoutSink& sink) {
  EventLoop loop(clock_);
  FanoutEngine engine(loop);
  TPUFLEET_ASSIGN_OR_RETURN(auto id, engine.Start(job, sink));
  // Cancellation (Ctrl-C) is polled: a signal interrupts poll, and a long wait is capped.
  constexpr std::chrono::milliseconds kCancelPoll{200};
  while (!engine.Finished(id)) {
    loop.RunOnce(kCancelPoll);
  }
  return Status::Ok();
}

}  // namespace tpufleet
