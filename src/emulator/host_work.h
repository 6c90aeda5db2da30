// HostWorkQueue: the WorkerHosts calls the ApiServer has decided on but not yet made.
//
// Booting a large node's workers takes seconds, so the ApiServer never calls
// WorkerHosts while it holds its mutex or while it answers a request: it posts a task
// here and returns. Whoever runs the server drains the queue — HttpServer with a few
// threads blocked in WaitAndRunOne, a unit test synchronously with RunOne — and each
// task reports back to the ApiServer when it is done.
//
// Tasks carry a key (the node's resource name). Tasks with the same key run one at a
// time in the order they were posted, as WorkerHosts requires ("calls for one node are
// serialised by the caller"); tasks of different nodes may run at once.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <string>

namespace tpufleet::emulator {

class HostWorkQueue {
 public:
  HostWorkQueue() = default;
  HostWorkQueue(const HostWorkQueue&) = delete;
  HostWorkQueue& operator=(const HostWorkQueue&) = delete;

  void Post(std::string key, std::function<void()> task);

  /// Runs the oldest task whose key is not busy in the calling thread. False when no
  /// task could run (none queued, or all of their keys busy in other threads).
  bool RunOne();

  /// Like RunOne, but waits up to `max_wait` (real time: this is the serving thread's
  /// idle wait, not a timing decision) for a runnable task. False on timeout or after
  /// Shutdown.
  bool WaitAndRunOne(std::chrono::milliseconds max_wait);

  /// Wakes every waiter; WaitAndRunOne returns false from then on. Queued tasks stay
  /// and RunOne still runs them.
  void Shutdown();

  /// Tasks queued or running.
  size_t size() const;

 private:
  struct Task {
    std::string key;
    std::function<void()> fn;
  };
  // Pops the first runnable task into *task and marks its key busy. REQUIRES: mu_ held.
  bool TakeLocked(Task* task);
  void Finish(const std::string& key);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;      // guarded by mu_
  std::set<std::string> busy_;  // keys with a running task; guarded by mu_
  bool shutdown_ = false;       // guarded by mu_
};

}  // namespace tpufleet::emulator
