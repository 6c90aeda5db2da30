// EventLoop: one thread's poll(2) loop. Descriptors are watched for reading and/or
// writing, timers fire once or repeatedly, and hooks run before each poll and at the end
// of each turn. The loop has no thread of its own: Run or RunOnce drives it on the
// caller's thread, and every callback runs there.
//
// A turn, as RunOnce runs it:
//   1. the before-poll hooks run (they set what to watch and arm timers);
//   2. poll waits until a watched descriptor is ready, the earliest timer is due, Wake
//      is called, or RunOnce's max_wait passes;
//   3. "now" is read from the Clock once: every callback of the turn gets that value,
//      so what they compute against it agrees (STYLE.md rule 9);
//   4. the callbacks of ready descriptors run, in the order they were watched;
//   5. the timers due at that now run, earliest first;
//   6. the turn-end hooks run, in the order they were added.
// A descriptor or timer removed during a turn gets no callback after its removal; one
// added during a turn is polled or checked from the next turn on.
//
// The clock is a Clock& (util/clock.h): with FakeClock a test moves time and runs a turn
// with RunOnce(0ms), which then never sleeps.
//
// Limit: poll(2) looks at every watched descriptor on every turn, so a turn costs
// O(watched descriptors). That is cheap up to a few thousand (the fan-out engine's
// connections plus the holder's clients); a process watching tens of thousands would
// want epoll instead, behind this same interface.
//
// Thread-safety: none, except Wake and Stop, which any thread or a signal handler may
// call (after EnableWake, for another thread or a signal to interrupt a waiting poll).
#pragma once

#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "util/clock.h"
#include "util/status.h"
#include "util/unique_fd.h"

namespace tpufleet {

class EventLoop {
 public:
  /// What Watch, the timers and the hooks return; Remove takes it. Never 0, never reused.
  using Id = uint64_t;
  /// A ready descriptor: `revents` as poll(2) set it (POLLIN, POLLOUT, POLLHUP, POLLERR).
  using FdCallback = std::function<void(short revents, Clock::MonoTime now)>;
  /// A timer or a hook. Before-poll hooks get the latest turn's now.
  using Callback = std::function<void(Clock::MonoTime now)>;

  explicit EventLoop(Clock& clock);
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;
  ~EventLoop() = default;

  Clock& clock() const { return clock_; }
  /// During a turn (in a callback): the turn's now. Outside a turn: the clock's now.
  Clock::MonoTime Now() const;

  /// Watches `fd` for `events` (POLLIN, POLLOUT or both). With events 0 the descriptor
  /// is not polled at all (not even for a hang-up) until SetEvents says otherwise.
  /// REQUIRES: fd >= 0 and open until Remove; the loop does not own it.
  Id Watch(int fd, short events, FdCallback callback);
  /// Changes what a watched descriptor waits for (0: not polled). No-op for an unknown id.
  void SetEvents(Id watch, short events);

  /// Runs `callback` once, on the first turn whose now is at or after `when`.
  Id At(Clock::MonoTime when, Callback callback);
  /// At(Now() + delay).
  Id After(std::chrono::nanoseconds delay, Callback callback);
  /// Runs `callback` every `interval` from Now() on, until removed. A turn that comes
  /// late runs it once, and the next run is an interval after that turn.
  /// REQUIRES: interval > 0.
  Id Every(std::chrono::nanoseconds interval, Callback callback);

  /// Runs `hook` at the start of every turn, before poll: the place to set what to
  /// watch and to arm timers from state the turn's callbacks changed.
  Id BeforePoll(Callback hook);
  /// Runs `hook` at the end of every turn, after the descriptors' and timers' callbacks.
  Id AtTurnEnd(Callback hook);

  /// Forgets a watch, timer or hook; no-op for an unknown or spent id (a fired one-shot).
  void Remove(Id id);

  /// One turn (see above). `max_wait` bounds the poll: 0 polls without waiting; a
  /// negative one waits as long as no timer is due (forever, with no timer).
  void RunOnce(std::chrono::milliseconds max_wait = std::chrono::milliseconds(-1));
  /// Turns until Stop. Returns at once (without a turn) when Stop came before Run.
  void Run();
  /// Turns until `done()` is true (asked before each turn) or Stop. A turn that polls no
  /// descriptor and only waits for a timer sleeps on the Clock instead of in poll, so
  /// with FakeClock time moves to the timer at once. FailedPrecondition when two turns in
  /// a row had nothing at all to wait for (no descriptor, no timer) and `done()` still
  /// says false: nothing could ever change that.
  Status RunUntil(const std::function<bool()>& done);
  /// Ends Run after the current turn (or before the next one). Safe from any thread and
  /// from a signal handler; wakes a waiting poll when EnableWake was called.
  void Stop();
  /// Makes Wake (and Stop) from another thread or a signal handler end a waiting poll:
  /// opens an eventfd the loop watches. Call on the loop's thread, before Wake is used.
  Status EnableWake();
  /// Ends a waiting poll soon (the turn then runs as usual). Safe from any thread and
  /// from a signal handler (one write(2)); does nothing without EnableWake.
  void Wake();

 private:
  // What Remove takes away during a turn stays (marked removed) until the turn ends: a
  // callback may remove itself while it runs.
  struct FdWatch {
    int fd;
    short events;
    FdCallback callback;
    bool removed = false;
  };
  struct Timer {
    Clock::MonoTime due;
    std::chrono::nanoseconds interval;  // 0: one-shot
    Callback callback;
    bool removed = false;
  };
  struct Hook {
    Callback callback;
    bool removed = false;
  };

  Id Arm(Clock::MonoTime due, std::chrono::nanoseconds interval, Callback callback);
  // RunOnce's turn; with `sleep_on_clock`, a wait for a timer alone sleeps on the clock.
  // False when the turn had nothing to wait for (no descriptor polled, no timer).
  bool Turn(std::chrono::milliseconds max_wait, bool sleep_on_clock);
  int PollTimeoutMs(std::chrono::milliseconds max_wait) const;
  void RunHooks(const std::map<Id, Hook>& hooks, Clock::MonoTime now);
  void Bury();
  void DispatchFds(Clock::MonoTime now);
  void DispatchTimers(Clock::MonoTime now);

  Clock& clock_;
  Clock::MonoTime now_;
  bool in_turn_ = false;      // between poll's return and the turn's end: Now() is now_
  bool dispatching_ = false;  // running callbacks or hooks: Remove only marks
  Id next_id_ = 1;
  std::map<Id, FdWatch> watches_;  // by id: the order they were watched
  std::map<Id, Timer> timers_;
  std::set<std::pair<Clock::MonoTime, Id>> due_;  // timers_ by when they are due
  std::map<Id, Hook> before_poll_;
  std::map<Id, Hook> turn_end_;
  std::vector<pollfd> pollfds_;  // this turn's, with the watch each came from
  std::vector<Id> polled_;
  std::vector<Id> removed_;  // marked removed during callbacks, erased after them
  UniqueFd wake_fd_;               // the eventfd of EnableWake
  std::atomic<int> wake_raw_{-1};  // its number, for Wake from another thread or a signal
  std::atomic<bool> stop_{false};
};

}  // namespace tpufleet
