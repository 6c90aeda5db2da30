#include "util/event_loop.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <limits>

#include "util/file.h"

namespace tpufleet {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

EventLoop::EventLoop(Clock& clock) : clock_(clock), now_(clock.MonotonicNow()) {}

Clock::MonoTime EventLoop::Now() const { return in_turn_ ? now_ : clock_.MonotonicNow(); }

EventLoop::Id EventLoop::Watch(int fd, short events, FdCallback callback) {
  Id id = next_id_++;
  watches_.emplace(id, FdWatch{fd, events, std::move(callback)});
  return id;
}

void EventLoop::SetEvents(Id watch, short events) {
  auto it = watches_.find(watch);
  if (it != watches_.end()) {
    it->second.events = events;
  }
}

EventLoop::Id EventLoop::Arm(Clock::MonoTime due, nanoseconds interval, Callback callback) {
  Id id = next_id_++;
  timers_.emplace(id, Timer{due, interval, std::move(callback)});
  due_.emplace(due, id);
  return id;
}

EventLoop::Id EventLoop::At(Clock::MonoTime when, Callback callback) {
  return Arm(when, nanoseconds(0), std::move(callback));
}

EventLoop::Id EventLoop::After(nanoseconds delay, Callback callback) {
  return Arm(Now() + delay, nanoseconds(0), std::move(callback));
}

EventLoop::Id EventLoop::Every(nanoseconds interval, Callback callback) {
  return Arm(Now() + interval, interval, std::move(callback));
}

EventLoop::Id EventLoop::BeforePoll(Callback hook) {
  Id id = next_id_++;
  before_poll_.emplace(id, Hook{std::move(hook)});
  return id;
}

EventLoop::Id EventLoop::AtTurnEnd(Callback hook) {
  Id id = next_id_++;
  turn_end_.emplace(id, Hook{std::move(hook)});
  return id;
}

void EventLoop::Remove(Id id) {
  if (auto w = watches_.find(id); w != watches_.end()) {
    w->second.removed = true;
  } else if (auto t = timers_.find(id); t != timers_.end()) {
    due_.erase({t->second.due, id});
    t->second.removed = true;
  } else if (auto b = before_poll_.find(id); b != before_poll_.end()) {
    b->second.removed = true;
  } else if (auto e = turn_end_.find(id); e != turn_end_.end()) {
    e->second.removed = true;
  } else {
    return;
  }
  removed_.push_back(id);
  if (!dispatching_) {
    Bury();
  }
}

void EventLoop::Bury() {
  for (Id id : removed_) {
    watches_.erase(id);
    timers_.erase(id);
    before_poll_.erase(id);
    turn_end_.erase(id);
  }
  removed_.clear();
}

int EventLoop::PollTimeoutMs(milliseconds max_wait) const {
  int64_t wait = max_wait.count() < 0 ? -1 : max_wait.count();
  if (!due_.empty()) {
    Clock::MonoTime due = due_.begin()->first;
    Clock::MonoTime now = clock_.MonotonicNow();
    // Rounded up: a poll that ended a little early would only spin until the timer is due.
    int64_t until = due <= now ? 0 : std::chrono::ceil<milliseconds>(due - now).count();
    wait = wait < 0 ? until : std::min(wait, until);
  }
  return static_cast<int>(std::min<int64_t>(wait, std::numeric_limits<int>::max()));
}

void EventLoop::RunHooks(const std::map<Id, Hook>& hooks, Clock::MonoTime now) {
  // By id, looked up again each time: a hook may add or remove hooks.
  for (auto it = hooks.begin(); it != hooks.end(); it = hooks.upper_bound(it->first)) {
    if (!it->second.removed) {
      it->second.callback(now);
    }
  }
}

void EventLoop::DispatchFds(Clock::MonoTime now) {
  for (size_t i = 0; i < pollfds_.size(); ++i) {
    if (pollfds_[i].revents == 0) {
      continue;
    }
    auto it = watches_.find(polled_[i]);
    if (it != watches_.end() && !it->second.removed) {
      it->second.callback(pollfds_[i].revents, now);
    }
  }
}

void EventLoop::DispatchTimers(Clock::MonoTime now) {
  // Those due now, in order; one a callback removes meanwhile does not run, and one
  // armed meanwhile waits for the next turn even when already due.
  std::vector<Id> due;
  for (auto it = due_.begin(); it != due_.end() && it->first <= now; ++it) {
    due.push_back(it->second);
  }
  for (Id id : due) {
    auto it = timers_.find(id);
    if (it == timers_.end() || it->second.removed) {
      continue;
    }
    Timer& t = it->second;
    due_.erase({t.due, id});
    if (t.interval.count() == 0) {
      t.removed = true;  // spent; erased after the turn
      removed_.push_back(id);
      t.callback(now);
      continue;
    }
    // Repeating: the next run keeps the rhythm unless this one came a whole interval late.
    t.due = t.due + t.interval > now ? t.due + t.interval : now + t.interval;
    due_.emplace(t.due, id);
    t.callback(now);
  }
}

void EventLoop::RunOnce(milliseconds max_wait) { (void)Turn(max_wait, false); }

bool EventLoop::Turn(milliseconds max_wait, bool sleep_on_clock) {
  dispatching_ = true;
  RunHooks(before_poll_, now_);  // Now() is the clock's here: timers armed from it
  dispatching_ = false;
  Bury();
  pollfds_.clear();
  polled_.clear();
  for (const auto& [id, w] : watches_) {
    if (w.events != 0) {
      pollfds_.push_back(pollfd{w.fd, w.events, 0});
      polled_.push_back(id);
    }
  }
  int timeout = stop_.load() ? 0 : PollTimeoutMs(max_wait);
  bool something = !pollfds_.empty() || !due_.empty();
  if (sleep_on_clock && pollfds_.empty()) {
    if (!due_.empty()) {
      Clock::MonoTime now = clock_.MonotonicNow();
      if (due_.begin()->first > now) {
        clock_.SleepFor(due_.begin()->first - now);
      }
    }
    timeout = 0;
  }
  if (::poll(pollfds_.data(), pollfds_.size(), timeout) < 0) {
    for (auto& p : pollfds_) {
      p.revents = 0;  // EINTR (a signal): the turn runs with nothing ready
    }
  }
  now_ = clock_.MonotonicNow();
  in_turn_ = true;
  dispatching_ = true;
  DispatchFds(now_);
  DispatchTimers(now_);
  RunHooks(turn_end_, now_);
  dispatching_ = false;
  in_turn_ = false;
  Bury();
  return something;
}

void EventLoop::Run() {
  while (!stop_.load()) {
    RunOnce();
  }
  stop_.store(false);  // so the loop can be run again
}

Status EventLoop::RunUntil(const std::function<bool()>& done) {
  bool idle = false;  // the last turn had nothing to wait for
  while (!stop_.load() && !done()) {
    bool waited = Turn(milliseconds(-1), true);
    if (!waited && idle) {
      return FailedPreconditionError("the event loop has nothing left to wait for");
    }
    idle = !waited;
  }
  stop_.store(false);
  return Status::Ok();
}

void EventLoop::Stop() {
  stop_.store(true);
  Wake();
}

Status EventLoop::EnableWake() {
  if (wake_fd_.get() >= 0) {
    return Status::Ok();
  }
  wake_fd_ = UniqueFd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (wake_fd_.get() < 0) {
    return ErrnoStatus("eventfd", errno);
  }
  int fd = wake_fd_.get();
  Watch(fd, POLLIN, [fd](short, Clock::MonoTime) {
    uint64_t count;
    (void)!::read(fd, &count, sizeof count);  // drained: the next Wake is seen again
  });
  wake_raw_.store(fd);
  return Status::Ok();
}

void EventLoop::Wake() {
  int fd = wake_raw_.load();
  if (fd >= 0) {
    uint64_t one = 1;
    (void)!::write(fd, &one, sizeof one);
  }
}

}  // namespace tpufleet
