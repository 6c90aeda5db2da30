// InterruptWatch: while it lives, the first SIGINT or SIGTERM asks the running command
// to stop (Interrupted() turns true) instead of ending the process; a second one ends
// the process at once, as the signal's default action does (a stop that hangs can
// still be cut short).
//
// No variable records the signal. A handler takes no argument, so whatever it set
// would have to be process-wide; instead the handler does nothing, and SA_RESETHAND has
// the kernel put the default action back as it runs: "our handler is no longer
// installed" is the record, kept by the kernel, and this object owns the rest (the
// actions to restore). The handler is installed without SA_RESTART, so a poll(2) in
// progress returns EINTR and the fan-out engine asks its sink's Cancelled() at once.
//
// A command a team server runs for a client (Invocation::interrupt) watches its flag
// instead, which the server sets when the client went away: no signal is touched, so
// serve's own SIGINT and SIGTERM stay serve's.
//
// Thread-safety: signal actions are process-wide, so one InterruptWatch on signals at a
// time per process (exec makes one for its run); Interrupted() may be called from any
// thread.
#pragma once

#include <signal.h>

#include <atomic>

namespace tpufleet::cli {

class InterruptWatch {
 public:
  /// Installs the handler for SIGINT and SIGTERM, remembering their actions; with a
  /// `flag`, none: Interrupted() is the flag. `flag` must outlive the watch.
  explicit InterruptWatch(const std::atomic<bool>* flag = nullptr);
  /// Puts back the actions the constructor found.
  ~InterruptWatch();
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;

  /// True once SIGINT or SIGTERM came while this watch lived.
  bool Interrupted() const;

 private:
  const std::atomic<bool>* const flag_;
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

}  // namespace tpufleet::cli
