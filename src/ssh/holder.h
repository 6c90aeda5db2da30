// The connection holder: a small per-user process that keeps the fan-out engine's SSH
// connections open between commands, so a repeated `exec` opens channels on logged-in
// connections (about one round trip) instead of doing a key exchange and a login per
// worker. The CLI starts it on demand and talks to it over a Unix socket in tpufleet's
// state directory; it ends itself after kHolderIdleExit without a job, or at once when
// its socket file is removed or replaced.
//
// The protocol (holder_protocol.h, specified in docs/holder-protocol.md): a socket
// carries one request (run a job, status, stop) and the holder's frames in answer.
// A request that is not one of the spec is answered with an error frame and its socket
// closed; the holder goes on serving the others.
// A client that reads slowly holds its job: above kHolderClientBacklogBytes unsent, the
// holder stops reading the job's SSH channels until the client has caught up.
// A client that goes away cancels its job (its workers' connections close, which
// stops stoppable commands). Only the holder's own user may connect (SO_PEERCRED), and
// a client talks only to a holder of its own user: before it sends anything, the
// socket's directory must be the client's and not writable by others, the socket file
// the client's, and the listening process (SO_PEERCRED) the client's effective user.
// Otherwise the request is PermissionDenied, naming who is there.
//
// The holder is one EventLoop (util/event_loop.h) in one thread: its listening socket,
// its clients and the fan-out engine's connections are watches of that loop.
//
// Thread-safety: ServeHolder owns its thread; a HolderFanout runs one job at a time.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "ssh/fanout.h"
#include "util/clock.h"
#include "util/status.h"

namespace tpufleet {

/// The holder exits after this long without a job, closing its connections: warm
/// enough for an interactive session of commands, not a forgotten daemon.
inline constexpr std::chrono::minutes kHolderIdleExit{15};
/// A client with more than this many bytes of output not yet sent to it holds its
/// job's channels (FanoutSink::Backlogged), so the holder keeps at most this plus one
/// read (kFanoutIoChunk) per client however much the workers print and however slowly
/// the client reads. A few Unix socket buffers (about 200 KiB each): a client that
/// keeps up never waits for it.
inline constexpr size_t kHolderClientBacklogBytes = 1024 * 1024;
/// A new holder has this long to answer on its socket before the CLI runs the job in
/// its own process instead (the holder starts in a few milliseconds).
inline constexpr std::chrono::seconds kHolderStartTimeout{3};
/// A client sends its whole request right after the greeting; one that has not within
/// this long (a stalled or confused process) is answered with a Timeout error and its
/// socket closed, so it cannot keep the holder from ending when idle.
inline constexpr std::chrono::seconds kHolderRequestTimeout{10};

/// Runs the holder on `socket_path` until idle or told to stop. FailedPrecondition when
/// another holder already answers there.
Status ServeHolder(const std::string& socket_path, Clock& clock);

/// Asks the holder at `socket_path` for its status ({pid, connections, busy,
/// peak_backlog_bytes} as JSON text: peak_backlog_bytes is the most output it has held
/// for one client since it started) or to stop. Unavailable when none runs;
/// PermissionDenied when the socket or the process behind it is not the caller's
/// (nothing is sent then).
Result<std::string> HolderStatus(const std::string& socket_path);
Status StopHolder(const std::string& socket_path);

/// A Fanout that runs jobs in the holder, starting it with `start_holder` when none
/// answers, and in this process (cold) when it cannot be reached even so. A holder that
/// is not the caller's own is PermissionDenied from Run, and the job is not run.
class HolderFanout final : public Fanout {
 public:
  HolderFanout(std::string socket_path, std::function<Status()> start_holder, Clock& clock)
      : socket_path_(std::move(socket_path)), start_holder_(std::move(start_holder)),
        clock_(clock) {}
  Status Run(const FanoutJob& job, FanoutSink& sink) override;

 private:
  const std::string socket_path_;
  const std::function<Status()> start_holder_;
  Clock& clock_;
};

}  // namespace tpufleet
