#include "emulator/host_work.h"

namespace tpufleet::emulator {

void HostWorkQueue::Post(std::string key, std::function<void()> task) {
  {
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back({std::move(key), std::move(task)});
  }
  cv_.notify_one();
}

bool HostWorkQueue::TakeLocked(Task* task) {
  // A key with an earlier task still queued must wait for it too, so order holds.
  std::set<std::string> seen;
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (!busy_.count(it->key) && !seen.count(it->key)) {
      *task = std::move(*it);
      queue_.erase(it);
      busy_.insert(task->key);
      return true;
    }
    seen.insert(it->key);
  }
  return false;
}

void HostWorkQueue::Finish(const std::string& key) {
  {
    std::lock_guard<std::mutex> l(mu_);
    busy_.erase(key);
  }
  cv_.notify_all();
}

bool HostWorkQueue::RunOne() {
  Task task;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!TakeLocked(&task)) {
      return false;
    }
  }
  task.fn();
  Finish(task.key);
  return true;
}

bool HostWorkQueue::WaitAndRunOne(std::chrono::milliseconds max_wait) {
  Task task;
  {
    std::unique_lock<std::mutex> l(mu_);
    // The predicate is checked under mu_: it either sees shutdown_ or takes a task.
    cv_.wait_for(l, max_wait, [&] { return shutdown_ || TakeLocked(&task); });
    if (!task.fn) {
      return false;
    }
  }
  task.fn();
  Finish(task.key);
  return true;
}

void HostWorkQueue::Shutdown() {
  {
    std::lock_guard<std::mutex> l(mu_);
    shutdown_ = true;
  }
  cv_.notify_all();
}

size_t HostWorkQueue::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return queue_.size() + busy_.size();
}

}  // namespace tpufleet::emulator
