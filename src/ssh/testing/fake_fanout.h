// FakeFanout: a Fanout for unit tests that reaches no host. It records every job and
// answers each host through `respond` (default: no output, exit 0), in host order.
//
// A job may take time (`run_time`): Run (blocking) sleeps that long on `clock`, as a real
// blocking run would; a session's job (Open) answers on its loop after that long, and
// the loop goes on meanwhile.
//
// Thread-safety: one test thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "ssh/fanout.h"
#include "util/clock.h"

namespace tpufleet {

class FakeFanout final : public Fanout {
 public:
  Status Run(const FanoutJob& job, FanoutSink& sink) override {
    jobs.push_back(job);
    if (run_time && clock) {
      clock->SleepFor(run_time(job));
    }
    Answer(job, jobs.size() - 1, sink);
    return Status::Ok();
  }

  std::unique_ptr<FanoutSession> Open(EventLoop& loop) override {
    return std::make_unique<Session>(*this, loop);
  }

  /// Called for host `index` of a job: may write output to the sink; returns its result.
  std::function<HostResult(const FanoutHost& host, size_t index, FanoutSink& sink)> respond;
  /// How long a job runs before its hosts answer (unset: no time at all).
  std::function<std::chrono::nanoseconds(const FanoutJob& job)> run_time;
  /// The clock Run sleeps run_time on (null: Run takes no time).
  Clock* clock = nullptr;
  std::vector<FanoutJob> jobs;
  /// The job `respond` is answering for: an index into jobs.
  size_t answering = 0;

 private:
  // Answers each job on its loop, run_time after its start.
  class Session final : public FanoutSession {
   public:
    Session(FakeFanout& fake, EventLoop& loop) : fake_(fake), loop_(loop) {}
    ~Session() override {
      for (EventLoop::Id id : timers_) {
        loop_.Remove(id);
      }
    }
    Status Start(const FanoutJob& job, FanoutSink& sink, Done done) override {
      fake_.jobs.push_back(job);
      size_t index = fake_.jobs.size() - 1;
      std::chrono::nanoseconds after =
          fake_.run_time ? fake_.run_time(job) : std::chrono::nanoseconds::zero();
      timers_.push_back(loop_.After(after, [this, index, &sink, done](Clock::MonoTime) {
        fake_.Answer(fake_.jobs[index], index, sink);
        done();
      }));
      return Status::Ok();
    }

   private:
    FakeFanout& fake_;
    EventLoop& loop_;
    std::vector<EventLoop::Id> timers_;  // removing a spent one is a no-op
  };

  void Answer(const FanoutJob& job, size_t index, FanoutSink& sink) {
    answering = index;
    for (size_t i = 0; i < job.hosts.size(); ++i) {
      HostResult result;
      if (respond) {
        result = respond(job.hosts[i], i, sink);
      }
      sink.OnResult(i, result);
    }
  }
};

}  // namespace tpufleet
