// The event loop with a FakeClock (timers fire when the test moves time, and a turn
// with max_wait 0 never sleeps) and pipes for descriptors.
#include "util/event_loop.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "util/testing/fake_clock.h"
#include "util/testing/status_printer.h"

namespace tpufleet {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr milliseconds kNoWait{0};

class Pipe {
 public:
  Pipe() {
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    read_ = UniqueFd(fds[0]);
    write_ = UniqueFd(fds[1]);
  }
  int read_end() const { return read_.get(); }
  void Write() { EXPECT_EQ(::write(write_.get(), "x", 1), 1); }
  void CloseWriteEnd() { write_.Reset(); }

 private:
  UniqueFd read_, write_;
};

TEST(EventLoop, AOneShotTimerFiresOnceWhenDue) {
  FakeClock clock;
  EventLoop loop(clock);
  int fired = 0;
  loop.After(seconds(10), [&](Clock::MonoTime) { ++fired; });
  loop.RunOnce(kNoWait);
  EXPECT_EQ(fired, 0);
  clock.Advance(seconds(9));
  loop.RunOnce(kNoWait);
  EXPECT_EQ(fired, 0);
  clock.Advance(seconds(1));
  loop.RunOnce(kNoWait);
  EXPECT_EQ(fired, 1);
  clock.Advance(seconds(100));
  loop.RunOnce(kNoWait);
  EXPECT_EQ(fired, 1);
}

TEST(EventLoop, ARepeatingTimerKeepsItsRhythmAndALateTurnRunsItOnce) {
  FakeClock clock;
  EventLoop loop(clock);
  std::vector<Clock::MonoTime> runs;
  auto start = clock.MonotonicNow();
  EventLoop::Id every = loop.Every(seconds(1), [&](Clock::MonoTime now) { runs.push_back(now); });
  for (int i = 0; i < 3; ++i) {
    clock.Advance(seconds(1));
    loop.RunOnce(kNoWait);
  }
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[2], start + seconds(3));
  clock.Advance(milliseconds(5500));  // five intervals missed: one run, not five
  loop.RunOnce(kNoWait);
  EXPECT_EQ(runs.size(), 4u);
  clock.Advance(milliseconds(999));  // the next is an interval after the late turn
  loop.RunOnce(kNoWait);
  EXPECT_EQ(runs.size(), 4u);
  clock.Advance(milliseconds(1));
  loop.RunOnce(kNoWait);
  EXPECT_EQ(runs.size(), 5u);
  loop.Remove(every);
  clock.Advance(seconds(5));
  loop.RunOnce(kNoWait);
  EXPECT_EQ(runs.size(), 5u);
}

TEST(EventLoop, EveryCallbackOfATurnGetsTheSameNow) {
  FakeClock clock;
  EventLoop loop(clock);
  Pipe pipe;
  std::vector<Clock::MonoTime> seen;
  // Each callback moves the clock: the turn's now does not move with it.
  auto record = [&](Clock::MonoTime now) {
    seen.push_back(now);
    EXPECT_EQ(loop.Now(), now);
    clock.Advance(seconds(1));
  };
  loop.Watch(pipe.read_end(), POLLIN, [&](short, Clock::MonoTime now) { record(now); });
  loop.After(seconds(0), record);
  loop.After(seconds(0), record);
  loop.AtTurnEnd(record);
  pipe.Write();
  loop.RunOnce(kNoWait);
  ASSERT_EQ(seen.size(), 4u);
  for (auto t : seen) {
    EXPECT_EQ(t, seen[0]);
  }
  // Outside a turn, Now() is the clock's.
  EXPECT_EQ(loop.Now(), clock.MonotonicNow());
}

TEST(EventLoop, AWatchCallsBackForItsEventsOnly) {
  FakeClock clock;
  EventLoop loop(clock);
  Pipe pipe;
  std::vector<short> calls;
  EventLoop::Id watch =
      loop.Watch(pipe.read_end(), POLLIN, [&](short revents, Clock::MonoTime) {
        calls.push_back(revents);
      });
  loop.RunOnce(kNoWait);
  EXPECT_TRUE(calls.empty());
  pipe.Write();
  loop.RunOnce(kNoWait);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_TRUE(calls[0] & POLLIN);
  // Events 0: not polled, not even for the hang-up.
  loop.SetEvents(watch, 0);
  pipe.CloseWriteEnd();
  loop.RunOnce(kNoWait);
  EXPECT_EQ(calls.size(), 1u);
  loop.SetEvents(watch, POLLIN);
  loop.RunOnce(kNoWait);
  EXPECT_EQ(calls.size(), 2u);
  loop.Remove(watch);
  loop.RunOnce(kNoWait);
  EXPECT_EQ(calls.size(), 2u);
}

TEST(EventLoop, WhatACallbackRemovesGetsNoCallbackAndACallbackMayRemoveItself) {
  FakeClock clock;
  EventLoop loop(clock);
  Pipe a, b;
  int a_calls = 0, b_calls = 0, timer_calls = 0;
  EventLoop::Id watch_b = 0, timer = 0, self = 0;
  loop.Watch(a.read_end(), POLLIN, [&](short, Clock::MonoTime) {
    ++a_calls;
    loop.Remove(watch_b);  // ready in this same turn
    loop.Remove(timer);    // due in this same turn
  });
  watch_b = loop.Watch(b.read_end(), POLLIN, [&](short, Clock::MonoTime) { ++b_calls; });
  timer = loop.After(seconds(0), [&](Clock::MonoTime) { ++timer_calls; });
  int self_calls = 0;
  std::string captured = "a capture that lives in the callback";
  self = loop.AtTurnEnd([&, captured](Clock::MonoTime) {
    loop.Remove(self);
    ++self_calls;
    EXPECT_EQ(captured.size(), 36u);  // still alive after its own removal
  });
  a.Write();
  b.Write();
  loop.RunOnce(kNoWait);
  loop.RunOnce(kNoWait);
  EXPECT_EQ(a_calls, 2);
  EXPECT_EQ(b_calls, 0);
  EXPECT_EQ(timer_calls, 0);
  EXPECT_EQ(self_calls, 1);
}

TEST(EventLoop, BeforePollHooksRunBeforeThePollAndTurnEndHooksAfterTheCallbacks) {
  FakeClock clock;
  EventLoop loop(clock);
  Pipe pipe;
  std::vector<std::string> order;
  EventLoop::Id watch = loop.Watch(pipe.read_end(), 0, [&](short, Clock::MonoTime) {
    order.push_back("fd");
  });
  loop.BeforePoll([&](Clock::MonoTime) {
    order.push_back("before");
    loop.SetEvents(watch, POLLIN);  // what a hook sets is polled in the same turn
    loop.At(Clock::MonoTime::min(), [&](Clock::MonoTime) { order.push_back("timer"); });
  });
  loop.AtTurnEnd([&](Clock::MonoTime) { order.push_back("end"); });
  pipe.Write();
  loop.RunOnce(kNoWait);
  EXPECT_EQ(order, (std::vector<std::string>{"before", "fd", "timer", "end"}));
}

TEST(EventLoop, StopEndsRunAfterTheTurn) {
  FakeClock clock;
  EventLoop loop(clock);
  int turns = 0;
  loop.AtTurnEnd([&](Clock::MonoTime) {
    if (++turns == 3) {
      loop.Stop();
    }
  });
  loop.After(seconds(0), [](Clock::MonoTime) {});
  loop.Every(seconds(1), [&](Clock::MonoTime) { clock.Advance(seconds(1)); });
  clock.Advance(seconds(1));
  loop.Run();
  EXPECT_EQ(turns, 3);
  // Stop before Run: Run returns at once, and the loop runs again afterwards.
  loop.Stop();
  loop.Run();
  EXPECT_EQ(turns, 3);
}

// The holder or a server stopped from another thread (or a signal handler on another
// thread): the waiting poll ends at once, not when some timer happens to be due.
TEST(EventLoop, StopFromAnotherThreadEndsAWaitingPoll) {
  RealClock clock;
  EventLoop loop(clock);
  ASSERT_TRUE(loop.EnableWake().ok());
  loop.After(std::chrono::hours(1), [](Clock::MonoTime) {});
  auto start = std::chrono::steady_clock::now();
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(20));
    loop.Stop();
  });
  loop.Run();
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(10));
}

TEST(EventLoop, PollWaitsForTheEarliestTimer) {
  RealClock clock;
  EventLoop loop(clock);
  bool fired = false;
  loop.After(milliseconds(30), [&](Clock::MonoTime) { fired = true; });
  auto start = std::chrono::steady_clock::now();
  while (!fired) {
    loop.RunOnce();  // no max_wait: only the timer ends the poll
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(30));
}

TEST(Issue11, RunUntilSleepsOnTheClockToTheNextTimerAndEndsWhenDone) {
  FakeClock clock;
  EventLoop loop(clock);
  auto start = clock.MonotonicNow();
  int fired = 0;
  loop.After(seconds(30), [&](Clock::MonoTime) { ++fired; });
  loop.After(seconds(90), [&](Clock::MonoTime) { ++fired; });

  EXPECT_EQ(loop.RunUntil([&] { return fired == 2; }), Status::Ok());

  EXPECT_EQ(clock.MonotonicNow() - start, seconds(90)) << "fake time moved, nothing slept";
}

TEST(Issue11, RunUntilFailsWhenNothingIsLeftToWaitFor) {
  FakeClock clock;
  EventLoop loop(clock);
  Status s = loop.RunUntil([] { return false; });
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
}

}  // namespace
}  // namespace tpufleet
