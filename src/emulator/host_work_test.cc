#include "emulator/host_work.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

namespace tpufleet::emulator {
namespace {

TEST(HostWorkQueue, RunsTasksInOrderInTheCallingThread) {
  HostWorkQueue q;
  std::vector<std::string> ran;
  q.Post("a", [&] { ran.push_back("a1"); });
  q.Post("a", [&] { ran.push_back("a2"); });
  q.Post("b", [&] { ran.push_back("b1"); });
  EXPECT_EQ(q.size(), 3u);
  while (q.RunOne()) {
  }
  EXPECT_EQ(ran, (std::vector<std::string>{"a1", "a2", "b1"}));
  EXPECT_EQ(q.size(), 0u);
  EXPECT_FALSE(q.RunOne());
}

TEST(HostWorkQueue, ABusyKeyWaitsWhileOthersRun) {
  HostWorkQueue q;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> started;
  std::vector<std::string> ran;
  std::mutex mu;
  auto record = [&](const char* s) {
    std::lock_guard<std::mutex> l(mu);
    ran.push_back(s);
  };
  q.Post("a", [&] {
    started.set_value();
    released.wait();
    record("a1");
  });
  q.Post("a", [&] { record("a2"); });
  q.Post("b", [&] { record("b1"); });
  std::thread worker([&] { q.RunOne(); });
  started.get_future().wait();
  EXPECT_TRUE(q.RunOne());   // b1: a is busy
  EXPECT_FALSE(q.RunOne());  // a2 must wait for a1
  release.set_value();
  worker.join();
  EXPECT_TRUE(q.RunOne());
  EXPECT_EQ(ran, (std::vector<std::string>{"b1", "a1", "a2"}));
}

TEST(HostWorkQueue, WaitAndRunOneTimesOutAndStopsAfterShutdown) {
  HostWorkQueue q;
  EXPECT_FALSE(q.WaitAndRunOne(std::chrono::milliseconds(1)));
  std::atomic<int> n{0};
  std::thread waiter([&] {
    while (q.WaitAndRunOne(std::chrono::milliseconds(1000))) {
      ++n;
    }
  });
  q.Post("a", [&] {});
  while (q.size() > 0) {
    std::this_thread::yield();
  }
  q.Shutdown();
  waiter.join();
  EXPECT_EQ(n.load(), 1);
  q.Post("a", [&] { ++n; });
  EXPECT_FALSE(q.WaitAndRunOne(std::chrono::milliseconds(1)));
  EXPECT_TRUE(q.RunOne());  // tasks left after Shutdown still run synchronously
  EXPECT_EQ(n.load(), 2);
}

}  // namespace
}  // namespace tpufleet::emulator
