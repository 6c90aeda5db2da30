// InitSpawner: starts worker init processes (worker_init.h) in new namespaces.
//
// Each init is made with clone(2) and CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWNS |
// CLONE_NEWUTS | CLONE_NEWIPC, so it is PID 1 of its own worker. Two things make sure
// no worker outlives the emulator, however the emulator ends:
//   - PR_SET_PDEATHSIG(SIGKILL). The kernel sends it when the *thread* that cloned the
//     child exits, not the process; the emulator's callers may be short-lived request
//     threads, so every clone happens on this class's own thread, which lives as long
//     as the spawner.
//   - a lifeline pipe: the emulator holds the only write end (close-on-exec, so no
//     other program inherits it); every init polls the read end and powers off when it
//     hangs up, which happens when the emulator process is gone.
// The namespaces are anonymous: nothing is named in /run/netns, so a dead worker leaves
// no trace.
//
// Thread-safety: Spawn may be called from any thread; requests are served in order.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "util/status.h"

namespace tpufleet::emulator::hosts {

class InitSpawner {
 public:
  InitSpawner();
  /// Stops the thread. Inits still running then get SIGKILL (their death signal), so
  /// the owner halts them properly first.
  ~InitSpawner();
  InitSpawner(const InitSpawner&) = delete;
  InitSpawner& operator=(const InitSpawner&) = delete;

  /// False when the lifeline pipe or the thread could not be made.
  Status status() const { return status_; }

  struct Request {
    std::string binary;             // absolute path of tpufleet-emulator-worker
    std::vector<std::string> argv;  // argv[0] included
    int log_fd = -1;                // becomes stdout and stderr
    int status_fd = -1;             // becomes kStatusFd
    int go_fd = -1;                 // becomes kGoFd
  };

  struct Started {
    pid_t pid = -1;  // in the machine's PID namespace; -1 when `error` says why not
    Status error;
  };
  /// Starts one init per request. The caller keeps ownership of the descriptors.
  std::vector<Started> Spawn(const std::vector<Request>& requests);

 private:
  void Loop();

  Status status_;
  int lifeline_read_ = -1;
  int lifeline_write_ = -1;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;  // guarded by mu_
  bool stop_ = false;                       // guarded by mu_
  std::thread thread_;
};

}  // namespace tpufleet::emulator::hosts
