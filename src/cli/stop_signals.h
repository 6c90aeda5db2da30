// StopSignals: while it lives, SIGINT, SIGTERM and SIGHUP (a terminal closed) are
// blocked in this thread and arrive on fd() instead, so that a command running ssh
// (forward, a served ssh or attach) can pass them on to ssh, or end it, and reap it
// before this process exits, with no signal handler and no process-wide state. Signals
// that came are taken back before the old mask returns, so none is delivered late.
// Programs started by SpawnSubprocess start with no signal blocked.
//
// Thread-safety: one thread's; made and destroyed on the thread that waits on fd().
#pragma once

#include <signal.h>

#include "util/unique_fd.h"

namespace tpufleet::cli {

class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  /// Readable once SIGINT, SIGTERM or SIGHUP came; -1 when it could not be made.
  int fd() const { return fd_.get(); }
  /// The signal fd() has to give (SIGINT, SIGTERM, SIGHUP), taking it; 0 when none.
  int Take();

 private:
  sigset_t set_;
  sigset_t old_;
  UniqueFd fd_;
};

}  // namespace tpufleet::cli
