#include "cli/interrupt_watch.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

namespace tpufleet::cli {
namespace {

TEST(InterruptWatch, TheFirstSignalAsksAndTheProcessGoesOn) {
  for (int sig : {SIGINT, SIGTERM}) {
    InterruptWatch watch;
    EXPECT_FALSE(watch.Interrupted());
    ASSERT_EQ(::raise(sig), 0);
    EXPECT_TRUE(watch.Interrupted()) << sig;
  }
}

TEST(InterruptWatch, EachWatchStartsClear) {
  {
    InterruptWatch first;
    ASSERT_EQ(::raise(SIGINT), 0);
    EXPECT_TRUE(first.Interrupted());
  }
  InterruptWatch second;
  EXPECT_FALSE(second.Interrupted());
}

TEST(InterruptWatch, PutsBackTheActionsItFound) {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  struct sigaction before {};
  ASSERT_EQ(::sigaction(SIGINT, &ignore, &before), 0);
  {
    InterruptWatch watch;
    ASSERT_EQ(::raise(SIGINT), 0);
  }
  struct sigaction after {};
  ASSERT_EQ(::sigaction(SIGINT, &before, &after), 0);
  EXPECT_EQ(after.sa_handler, SIG_IGN);
}

TEST(InterruptWatchDeathTest, ASecondSignalEndsTheProcess) {
  EXPECT_EXIT(
      {
        InterruptWatch watch;
        ::raise(SIGINT);
        ::raise(SIGINT);
        ::_exit(0);
      },
      ::testing::KilledBySignal(SIGINT), "");
}

}  // namespace
}  // namespace tpufleet::cli
