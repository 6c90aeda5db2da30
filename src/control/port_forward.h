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
// A forward outlives its connection: when ssh exits after it listened (the worker
// rebooted, its address changed, the network dropped), `tpufleet forward` starts it
// again after ForwardRetryDelay, and again, until it listens or PermanentForwardFailure
// says trying cannot help. The ssh config's ProxyCommand (control/resolve.h) finds the
// worker's new address on each attempt.
//
// Forwarder is how a World (control/world.h) starts forwards: SshForwarder spawns
// PortForward, built by src/app; tests hand in one that plays a script of events
// (control/testing/test_world.h), so they need no ssh.
//
// Thread-safety: one owner per forward; SshForwarder keeps no state.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"
#include "util/unique_fd.h"

namespace tpufleet {

/// How long ssh gets to exit after SIGTERM before it is killed: it only closes sockets.
inline constexpr std::chrono::milliseconds kSshStopGrace{1000};
/// How often a starting forward looks whether ssh listens yet: a person is waiting, and
/// a look (one bind) costs microseconds.
inline constexpr std::chrono::milliseconds kListenPoll{20};

/// A forward's ssh sends a keepalive this often and gives up after kForwardAliveCount
/// unanswered: a person waiting on TensorBoard learns of a dead connection (and gets a
/// new one) in 15 s, not the config's 45 s.
inline constexpr std::chrono::seconds kForwardAliveInterval{5};
inline constexpr int kForwardAliveCount = 3;
/// The first pause before a dropped forward is tried again, doubled after each failed
/// attempt up to kForwardRetryMax: a reboot takes a minute or so, and a worker that is
/// away for long is not asked (nor the cloud, by the ProxyCommand) more than twice a
/// minute.
inline constexpr std::chrono::seconds kForwardRetryFirst{1};
inline constexpr std::chrono::seconds kForwardRetryMax{30};

/// The pause before reconnect attempt `attempt` (0 is the first after a drop).
std::chrono::seconds ForwardRetryDelay(int attempt);

/// True when what ssh said as it exited (PortForward::ExitMessage) means that starting
/// it again cannot help: the worker's host key is not the pinned one, the login was
/// refused, the local port is taken by someone else, or the node is gone (ssh-proxy's
/// word for it, NodeState::IsDown). Anything else (refused, unreachable, timed out, closed) is
/// worth another attempt.
bool PermanentForwardFailure(std::string_view ssh_said);

/// The port on 127.0.0.1 to forward `remote_port` from: `wanted` when given
/// (FailedPrecondition when something listens there, PermissionDenied when this user may
/// not), else `remote_port` when that is free, else one the kernel picks.
Result<int> ChooseLocalPort(int remote_port, std::optional<int> wanted);

/// A running forward, as `tpufleet forward` sees it.
class Forward {
 public:
  enum class Event {
    kListening,  // it listens on the local port: the forward works
    kExited,     // it ended by itself (ssh exited); ExitMessage() says how
    kStopped,    // the stop descriptor turned readable: the caller wants to end it
  };

  Forward() = default;
  Forward(const Forward&) = delete;
  Forward& operator=(const Forward&) = delete;
  virtual ~Forward() = default;

  /// Waits for what comes next: before the forward listens, kListening, kExited or
  /// kStopped; after, kExited or kStopped. `stop_fd` is polled for reading (a signalfd,
  /// a pipe); a stop wins over an exit seen at the same time. From kListening on, what
  /// the forward says goes to `log`.
  virtual Event Wait(int stop_fd, std::ostream& log) = 0;
  /// After kExited: how it exited, and why it did not listen (PermanentForwardFailure
  /// reads it).
  virtual std::string ExitMessage() const = 0;
};

/// Starts forwards for `tpufleet forward`.
class Forwarder {
 public:
  Forwarder() = default;
  Forwarder(const Forwarder&) = delete;
  Forwarder& operator=(const Forwarder&) = delete;
  virtual ~Forwarder() = default;

  /// Starts `argv` (ForwardArgv), which is to listen on 127.0.0.1:`local_port`.
  virtual Result<std::unique_ptr<Forward>> Start(const std::vector<std::string>& argv,
                                                 int local_port) = 0;
};

class PortForward final : public Forward {
 public:
  /// Spawns `argv` (argv[0] looked up in PATH), which is to listen on
  /// 127.0.0.1:`local_port`. Errors as SpawnSubprocess; Internal when no pipe can be made.
  static Result<std::unique_ptr<PortForward>> Spawn(const std::vector<std::string>& argv,
                                                    int local_port);
  ~PortForward() override;

  /// Waits for what comes next: before ssh listens, kListening, kExited or kStopped;
  /// after, kExited or kStopped. `stop_fd` is polled for reading (a signalfd, a pipe);
  /// a stop wins over an exit seen at the same time (Ctrl-C ends ssh too). From
  /// kListening on, ssh's output (what came before included) goes to `log`.
  Event Wait(int stop_fd, std::ostream& log) override;

  /// After kExited: "ssh exited with status 255" and what ssh printed before it listened,
  /// the reason it did not.
  std::string ExitMessage() const override;
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

/// Starts each forward as a PortForward: the system's ssh.
class SshForwarder final : public Forwarder {
 public:
  Result<std::unique_ptr<Forward>> Start(const std::vector<std::string>& argv,
                                         int local_port) override;
};

}  // namespace tpufleet
