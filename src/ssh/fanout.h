// Fanout: one remote command on many hosts at once, the seam `exec` and `cp` use.
//
// A job names the hosts (address, login, pinned host key), the command line for each
// host's login shell, and optionally a local file streamed to every host's stdin. Each
// host's output is handed to the sink as it arrives, then exactly one result per host.
// A host that cannot be reached, refuses the key or times out is a result, not an
// error: Run fails only when the job itself cannot start (the key is unreadable).
//
// Run blocks until every host has its result (exec, cp). A FanoutSession (Open) starts
// jobs on the caller's EventLoop instead and returns at once, so the loop's other work
// (up's cloud polls) goes on while they run; it calls back when a job is over. A
// session's jobs may share connections: a later job to a worker an earlier one reached
// reuses its login (up's login check and setup: one handshake per worker).
//
// Implementations: FanoutEngine (fanout_engine.h: libssh2, one poll loop) run in this
// process, and the connection holder's client (holder.h), which keeps connections warm
// between commands. Tests of control use a fake.
//
// Thread-safety: a Fanout runs one job at a time per caller; the sink is called on the
// caller's thread (a session's: on its loop's thread).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/event_loop.h"
#include "util/status.h"

namespace tpufleet {

/// At most this many hosts are being connected to at once. The client side of a
/// handshake costs about 1 ms of CPU with libssh2 (reference/fanout.md), so the cap is
/// for the file-descriptor limit and the network, not for this process.
inline constexpr size_t kDefaultFanoutParallel = 1024;
/// A host whose server has not answered (TCP connect and its SSH banner) in this long is
/// reported unreachable, as OpenSSH's ConnectTimeout does (pdsh and ClusterShell wait
/// 10 s too); key exchange and login then get kFanoutLoginTimeout (fanout_engine.h).
inline constexpr std::chrono::seconds kFanoutConnectTimeout{10};
/// For a command that reads its input as it comes (cp's receiver): a worker that takes
/// none of it for this long has stalled (its sshd frozen or starved). Its kernel still
/// acknowledges, so neither TCP nor a keepalive notices; without a bound it waits forever.
inline constexpr std::chrono::seconds kFanoutInputStallTimeout{120};

struct FanoutHost {
  std::string name;      // "pod/w3": how messages name it
  std::string address;   // IP address or DNS name
  int port = 22;
  std::string user;      // the login; "" is refused
  std::string host_key;  // the pinned "ssh-ed25519 AAAA…"; a host without one fails alone
  std::string command;   // this host's own command line; "" = the job's
  bool no_input = false;  // this host does not get the job's stdin file (only stdin_header)
  // A Unix socket on the host to connect the channel to (OpenSSH's
  // direct-streamlocal@openssh.com) instead of running a command: no process starts on
  // the host, and the channel's end is exit 0. The socket gets `socket_input` as its
  // input (never the job's stdin). Where the host's sshd will not connect it (nothing
  // listens there, AllowStreamLocalForwarding no, not OpenSSH), the command runs as
  // without one, so its exit says why. "" = run the command.
  std::string unix_socket;
  std::string socket_input;
};

struct FanoutJob {
  std::vector<FanoutHost> hosts;
  std::string command;          // one line for each host's login shell, already quoted
  std::string key_path;         // the private key (OpenSSH format); KEY.pub beside it
  std::string stdin_path;       // "" = no input (stdin is at EOF at once); else streamed
  // Bytes every host's stdin gets before the stdin_path file (hosts with no_input get
  // only these): how cp hands each relay hop its per-copy key, never on a command line.
  std::string stdin_header;
  size_t max_parallel = kDefaultFanoutParallel;
  std::chrono::milliseconds connect_timeout = kFanoutConnectTimeout;
  std::chrono::milliseconds command_timeout{0};  // 0 = no limit
  // A host that takes none of its pending input for this long ends as kTimeout (time
  // its sink is Backlogged does not count); 0 = no limit. Callers whose commands read
  // their input at once use kFanoutInputStallTimeout.
  std::chrono::milliseconds input_stall_timeout{0};
  bool fail_fast = false;  // the first host that fails cancels the others
  // The command watches its stdin to know when to stop (control's stoppable wrapper):
  // no EOF is sent; closing the connection (a cancel) is the order to stop.
  bool hold_stdin = false;
};

/// How one host's run ended.
enum class HostOutcome {
  kExited,           // the command ran; exit_code says how it ended
  kSignaled,         // the command was killed by a signal (signal names it)
  kUnreachable,      // TCP connect or the SSH handshake failed, or the connection broke
  kAuthFailed,       // the server refused the fleet key for this login
  kHostKeyMismatch,  // the server's key is not the one pinned for it (or none is pinned)
  kTimeout,          // connect_timeout, command_timeout or input_stall_timeout passed
  kCancelled,        // fail_fast (another host failed) or the caller cancelled
};

/// "exited", "signaled", "unreachable", "auth-failed", "host-key-mismatch", "timeout",
/// "cancelled": the names --json uses.
std::string_view HostOutcomeName(HostOutcome outcome);

struct HostResult {
  HostOutcome outcome = HostOutcome::kExited;
  int exit_code = 0;     // kExited: the command's status
  std::string signal;    // kSignaled: "TERM", "KILL", …
  std::string message;   // what went wrong, for people ("" when it exited)
  bool ok() const { return outcome == HostOutcome::kExited && exit_code == 0; }
};

/// True when `result` says the host was never reached: the TCP connect, the SSH
/// handshake or the login failed or did not finish within the connect timeout, so its
/// command did not start there and may be run at another address (control/resolve.h).
bool NeverConnected(const HostResult& result);

enum class OutputStream { kStdout, kStderr };

class FanoutSink {
 public:
  FanoutSink() = default;
  FanoutSink(const FanoutSink&) = delete;
  FanoutSink& operator=(const FanoutSink&) = delete;
  virtual ~FanoutSink() = default;

  /// Bytes host `host` (an index into job.hosts) wrote, in the order written per stream.
  virtual void OnOutput(size_t host, OutputStream stream, std::string_view data) = 0;
  /// Called once per host, after its last output.
  virtual void OnResult(size_t host, const HostResult& result) = 0;
  /// Polled between steps: true stops the job (every unfinished host is kCancelled).
  virtual bool Cancelled() { return false; }
  /// Polled before each read of a host's output: true while the sink holds more than it
  /// wants (the holder's client is behind). The engine then reads none of the job's
  /// channels until it is false again, so each worker's sshd stops at its SSH window
  /// and the command blocks on its output: memory stays bounded, nothing is dropped.
  virtual bool Backlogged() { return false; }
};

/// Jobs started on one EventLoop without blocking it. REQUIRES: the loop outlives the
/// session; destroying the session cancels what still runs (no callback after that).
class FanoutSession {
 public:
  /// Runs on the loop's thread once every host of the job has had OnResult.
  using Done = std::function<void()>;

  FanoutSession() = default;
  FanoutSession(const FanoutSession&) = delete;
  FanoutSession& operator=(const FanoutSession&) = delete;
  virtual ~FanoutSession() = default;

  /// Starts `job` and returns at once; its hosts' output and results reach `sink` from
  /// the loop's turns, then `done` runs (never from inside Start). An error, as Run's,
  /// when the job cannot start: then neither the sink nor `done` is called. The sink
  /// must outlive the job.
  virtual Status Start(const FanoutJob& job, FanoutSink& sink, Done done) = 0;
};

class Fanout {
 public:
  Fanout() = default;
  Fanout(const Fanout&) = delete;
  Fanout& operator=(const Fanout&) = delete;
  virtual ~Fanout() = default;

  /// Runs `job` on every host and returns when each has its result.
  virtual Status Run(const FanoutJob& job, FanoutSink& sink) = 0;
  /// A session whose jobs run on `loop`. This default runs each job with Run on a turn
  /// of the loop (which then waits for it): for implementations with no loop to share.
  virtual std::unique_ptr<FanoutSession> Open(EventLoop& loop);
};

}  // namespace tpufleet
