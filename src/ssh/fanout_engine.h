// FanoutEngine: the libssh2 fan-out engine. Every connection is a non-blocking socket
// this engine owns, and every step of every host (TCP connect, key exchange, host-key
// check, public-key login, channel, exec, streaming both ways, exit status) is driven
// from one poll loop (an EventLoop) in one thread, with one "now" per turn (STYLE.md
// rule 9).
//
// A connection carries one command at a time. Connections outlive jobs: a later job to
// the same (address, port, login, host key, key file) takes an idle authenticated one
// and only opens a channel, which is what makes the connection holder's repeated
// commands cost about one round trip; two jobs at once to one worker use two. (One
// channel per connection also keeps clear of libssh2's single pending-write slot per
// session, which channels written in turn would trip over.) A host whose channel
// fails on a reused connection (the VM rebooted meanwhile), or is not open with the
// command started within the job's connect_timeout (the worker went silent without a
// reset, which TCP may never report), retries once on a fresh one.
//
// While a job's sink is Backlogged(), its channels are not read (nor their sockets
// polled): libssh2 then adjusts no window, so a worker's sshd sends at most its window
// (about 2 MiB) beyond what was read, and the command blocks on its output. The job
// resumes on the first turn of the loop after the sink has caught up.
//
// libssh2 reads ahead: every channel call drains the socket into its buffers. A pass
// over a host whose later call took in what an earlier one waited for (a window
// adjustment after a write found the window shut, stdout data after the stdout reads)
// makes one more pass before the host waits on poll again, or it would wait forever.
//
// Cancelling a host (Cancel, fail_fast, command_timeout) closes its connection: sshd
// then closes the command's stdin, which control's stoppable wrapper takes as the
// order to kill the command's process group.
//
// The engine does not block and does not own its loop: it runs on the EventLoop
// (util/event_loop.h) it is given, beside whatever else the loop's owner watches (the
// holder's sockets). Each connection's socket is one watch; one timer wakes the loop for
// the earliest deadline or keepalive; the loop's per-turn now is the engine's. In a turn
// the engine drives the ready connections (in their callbacks), then the hosts held for
// their sink that may go on and the deadlines (its timer), then cancels the jobs whose
// sink says so, admits queued hosts and forgets what finished (a turn-end hook).
//
// LocalFanout runs a loop of its own for a single job in this process (Run), or an
// engine on the caller's loop for the jobs of one session (Open): up's login checks and
// setup scripts, whose later jobs reuse the earlier ones' connections.
//
// Security: the server's key must equal the pinned key byte for byte (no TOFU, no
// known_hosts file); a mismatch fails that host at once, naming both fingerprints, and
// is never retried. The login uses only the fleet key, read once per job.
//
// Thread-safety: none; one thread owns an engine and everything it calls back.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ssh/fanout.h"
#include "util/clock.h"
#include "util/event_loop.h"
#include "util/status.h"

namespace tpufleet {

/// Bytes read from a channel per call, and written per call: large enough that a
/// 200 MiB stream is a few thousand calls, small enough to interleave hosts fairly. A
/// sink is handed at most this much per OnOutput, and one more read after it says it is
/// Backlogged() never happens.
inline constexpr size_t kFanoutIoChunk = 256 * 1024;
/// Once a server has sent its SSH banner (within the connect timeout), key exchange and
/// login may take this long: a worker busy receiving a large copy answers slowly.
inline constexpr std::chrono::seconds kFanoutLoginTimeout{60};
/// An SSH keepalive goes out on a busy or idle connection this often, so a worker that
/// died without closing its socket is noticed (with kTcpUserTimeout) within a minute.
inline constexpr std::chrono::seconds kFanoutKeepaliveInterval{15};
/// Data the peer has not acknowledged for this long drops the connection (TCP_USER_TIMEOUT):
/// the kernel's default is about 15 minutes of retransmissions.
inline constexpr std::chrono::seconds kTcpUserTimeout{30};

class FanoutEngine {
 public:
  using JobId = uint64_t;

  /// REQUIRES: `loop` outlives the engine; the engine runs on the loop's thread.
  explicit FanoutEngine(EventLoop& loop);
  ~FanoutEngine();
  FanoutEngine(const FanoutEngine&) = delete;
  FanoutEngine& operator=(const FanoutEngine&) = delete;

  /// Queues `job`. The sink must outlive the job (until Finished(id)). InvalidArgument
  /// for a host without a login; the key and stdin file are read here. A host without a
  /// pinned key (or with a malformed one) is never connected to: it ends at once as
  /// kHostKeyMismatch, and the others run.
  Result<JobId> Start(const FanoutJob& job, FanoutSink& sink);
  /// Every unfinished host of the job ends as kCancelled at once (connection closed).
  void Cancel(JobId id);
  /// True once every host of the job has had OnResult; the job is then forgotten.
  bool Finished(JobId id) const;

  /// Closes connections that have had no channel for `idle`; returns how many remain.
  size_t CloseIdle(std::chrono::milliseconds idle);
  size_t open_connections() const { return conns_.size(); }
  bool busy() const { return !jobs_.empty(); }

 private:
  struct Job;
  struct Task;
  struct Conn;
  struct Key;

  void Admit(Job& job);
  Conn* ConnFor(const Job& job, const FanoutHost& host);
  void DriveConn(Conn& conn);
  bool DriveTask(Task& task);
  void FailConn(Conn& conn, HostOutcome outcome, const std::string& message);
  void FinishTask(Task& task);
  void CancelTask(Task& task, HostOutcome outcome, const std::string& message);
  void CloseConn(Conn& conn);
  void CheckDeadlines();
  void Reap();
  // The loop's calls, in the order of a turn (see the top of this file).
  void OnReady(Conn& conn, Clock::MonoTime now);
  void OnTimer(Clock::MonoTime now);
  void OnTurnEnd(Clock::MonoTime now);
  void BeforePoll();

  EventLoop& loop_;
  Clock::MonoTime now_;
  EventLoop::Id before_poll_ = 0;
  EventLoop::Id turn_end_ = 0;
  EventLoop::Id timer_ = 0;  // armed by BeforePoll for the earliest deadline
  JobId next_id_ = 1;
  std::map<JobId, std::unique_ptr<Job>> jobs_;
  std::multimap<std::string, std::unique_ptr<Conn>> conns_;  // by host identity
};

/// Runs one job in this process with a FanoutEngine of its own: every connection is
/// cold. SIGINT during Run reaches the sink's Cancelled() as the caller arranges.
class LocalFanout final : public Fanout {
 public:
  explicit LocalFanout(Clock& clock) : clock_(clock) {}
  Status Run(const FanoutJob& job, FanoutSink& sink) override;
  std::unique_ptr<FanoutSession> Open(EventLoop& loop) override;

 private:
  Clock& clock_;
};

}  // namespace tpufleet
