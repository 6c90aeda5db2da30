// PortForward: a running `ssh -N -L` (ssh_login.h's ForwardArgv) for `tpufleet forward`,
// owned by its caller.
//
// ssh is spawned without a shell, inheriting this process's environment (HOME,
// SSH_AUTH_SOCK) and process group, so it can ask for a passphrase at the terminal and
// Ctrl-C reaches it too. Its output comes through a pipe: until it listens on the local
// port, what it prints is kept, because when it exits instead that is the explanation;
// once it listens, its output is copied to the caller's log as it comes (a line such as
// "connect failed: Connection refused" when nothing listens on the worker's port yet).
//
// Listening is detected without connecting: a connection would reach the worker's
// service, and make ssh complain when nothing is there yet. A bind to the port with
// SO_REUSEADDR fails with EADDRINUSE exactly when a socket listens on it, and never
// stands in the way of one that is about to.
//
// The destructor ends ssh (SIGTERM, then SIGKILL after kSshStopGrace) and reaps it,
// whatever happened before.
//
// Thread-safety: one owner.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "util/status.h"
#include "util/unique_fd.h"

namespace tpufleet {

/// How long ssh gets to exit after SIGTERM before it is killed: it only closes sockets.
inline constexpr std::chrono::milliseconds kSshStopGrace{1000};
/// How often a starting forward looks whether ssh listens yet: a person is waiting, and
/// a look (one bind) costs microseconds.
inline constexpr std::chrono::milliseconds kListenPoll{20};

/// The port on 127.0.0.1 to forward `remote_port` from: `wanted` when given
/// (FailedPrecondition when something listens there, PermissionDenied when this user may
/// not), else `remote_port` when that is free, else one the kernel picks.
Result<int> ChooseLocalPort(int remote_port, std::optional<int> wanted);

class PortForward {
 public:
  enum class Event {
    kListening,  // ssh listens on the local port: the forward works
    kExited,     // ssh exited by itself; ExitMessage() says how
    kStopped,    // the stop descriptor turned readable: the caller wants to end it
  };

  /// Spawns `argv` (argv[0] looked up in PATH), which is to listen on
  /// 127.0.0.1:`local_port`. Errors as SpawnSubprocess; Internal when no pipe can be made.
  static Result<std::unique_ptr<PortForward>> Spawn(const std::vector<std::string>& argv,
                                                    int local_port);
  ~PortForward();
  PortForward(const PortForward&) = delete;
  PortForward& operator=(const PortForward&) = delete;

  /// Waits for what comes next: before ssh listens, kListening, kExited or kStopped;
  /// after, kExited or kStopped. `stop_fd` is polled for reading (a signalfd, a pipe);
  /// a stop wins over an exit seen at the same time (Ctrl-C ends ssh too). From
  /// kListening on, ssh's output (what came before included) goes to `log`.
  Event Wait(int stop_fd, std::ostream& log);

  /// After kExited: "ssh exited with status 255" and what ssh printed before it listened,
  /// the reason it did not.
  std::string ExitMessage() const;
  /// ssh's process id; -1 once it has been reaped.
  pid_t pid() const { return pid_; }

 private:
  PortForward(pid_t pid, UniqueFd output, int local_port)
      : pid_(pid), output_(std::move(output)), local_port_(local_port) {}
  // Reads what ssh printed so far into `log` (listening) or early_output_ (not yet).
  void ReadOutput(std::ostream& log);
  // Reaps ssh if it has exited; true then.
  bool Reaped();

  pid_t pid_;        // -1 once reaped
  UniqueFd output_;  // ssh's stdout and stderr; closed at their end
  const int local_port_;
  bool listening_ = false;
  std::string early_output_;  // ssh's output before it listened (the last part)
  int wait_status_ = 0;       // waitpid's, once reaped
};

}  // namespace tpufleet
