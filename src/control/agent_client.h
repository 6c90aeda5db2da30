// AgentClient: one request to the node agent (tpufleet-agent) on many workers at once,
// through the World's fan-out: the SSH connections tpufleet already keeps, never a port
// of the agent's (it opens none).
//
// Each worker's channel is connected straight to the agent's Unix socket by its sshd
// (FanoutHost::unix_socket: OpenSSH's direct-streamlocal), the request with "worker": N
// (N: the worker's index on its node) its one line, so no process starts on the worker
// for a call. Where sshd will not connect it (no agent listening, forwarding turned
// off), and for the calls made as root (AgentCall::admin, behind `sudo -n`), the
// fan-out runs `/usr/local/bin/tpufleet-agent call --worker N` instead, the request the
// one line of its stdin (FanoutJob::stdin_header); `call` connects to the socket, sends
// the line with "worker": N added, and copies the agent's answer lines to its stdout
// until the answer ends, or says why it cannot (docs/agent-protocol.md). Requests never
// travel on a command line: a job's --env values are in them. Each answer line is
// parsed here with api/agent.h.
//
// A worker that does not answer is a result of that worker, never an error of the call:
// unreachable, the agent not running (`call` exits 3), not installed (the shell's 127),
// sudo refused, or an answer that cannot be read. Each such result's message names the
// worker and what to do ("the agent is not running on pod/w2: run `tpufleet up`").
//
// Streaming ops (job.logs, job.watch) hand every data and state line to the caller as
// it arrives, on the caller's thread, so `logs -f` prints while the job runs; the end
// line gives the worker's result. One-shot ops keep their one answer line per worker.
//
// Thread-safety: as World's members; the callbacks run on the calling thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "api/agent.h"
#include "control/targets.h"
#include "control/world.h"
#include "ssh/fanout.h"
#include "util/status.h"

namespace tpufleet {

/// Of what `call` wrote on stderr, this much is kept per worker for its message: the
/// one line `call`, sudo or the shell writes when they fail, with room to spare.
inline constexpr size_t kAgentStderrKeepBytes = 4096;

/// One request for every worker of a call.
struct AgentCall {
  /// The request; its "worker" is each worker's own index (`call --worker N` sets it).
  api::AgentRequest request;
  /// Run `call` through `sudo -n`: for the ops only root may do. A login without
  /// passwordless sudo then fails on that worker, with sudo's message.
  bool admin = false;
  /// Run in this process (World::local_fanout) rather than through the connection
  /// holder: for a call made while another streams (the gang rule's cancel from inside
  /// `logs -f`), since the holder runs one job at a time per client.
  bool cold = false;
  std::chrono::milliseconds connect_timeout = kFanoutConnectTimeout;
  std::chrono::milliseconds timeout{0};  // per worker; 0 = none (streaming ops)
};

/// One worker's answer.
struct AgentReply {
  /// OK when the agent answered OK. Otherwise why not: the agent's own error (its code,
  /// the message prefixed with the worker's name), or the worker's failure to answer
  /// (Unavailable: unreachable; FailedPrecondition: no agent running or installed;
  /// PermissionDenied: sudo refused; Timeout; Internal: an unreadable answer).
  Status status;
  /// True when the agent answered (status is then the answer's).
  bool answered = false;
  /// A one-shot op's answer body (api::AgentBody), when status is OK.
  api::AgentBody body;
};

/// Called for each data or state line of a streaming op, with the index of the worker
/// (into the call's workers) that sent it.
using AgentLineFn = std::function<void(size_t worker, const api::AgentLine& line)>;

/// Asked between steps; true stops the call (every worker not done is Unavailable,
/// "cancelled"). Empty: never.
using AgentCancelFn = std::function<bool()>;

/// The fan-out job that asks the agents of `workers` for `request` (its "worker" each
/// one's own): straight to each agent's socket unless `admin`, with `/usr/local/bin/
/// tpufleet-agent call --worker N` (behind `sudo -n` when `admin`) where that cannot be;
/// the channel held open (hold_stdin). Timeouts are the caller's to set.
FanoutJob AgentJob(const World& world, const std::vector<WorkerTarget>& workers,
                   api::AgentRequest request, bool admin);

/// Sends `call.request` to the agent of every worker of `workers` at once and returns
/// each worker's reply, in the order of `workers`. `on_line` gets the data and state
/// lines of a streaming op as they arrive (required for one; ignored otherwise).
/// A worker whose stored address does not answer is looked up again and retried
/// (RunResolving). Errors only when the call cannot start at all (the fleet key is
/// unreadable; InvalidArgument for no workers or a streaming op without `on_line`).
Result<std::vector<AgentReply>> CallAgents(World& world, const std::vector<WorkerTarget>& workers,
                                           const AgentCall& call, const AgentLineFn& on_line = {},
                                           const AgentCancelFn& cancelled = {});

}  // namespace tpufleet
