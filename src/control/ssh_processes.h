// SshProcesses: one program per host, many at once, each an `ssh` (or `scp`) process of
// the system's OpenSSH run as the person who runs tpufleet: their keys, their ssh-agent.
// This is how a collaborator's tpufleet reaches a team server's
// workers (`tpufleet --server URL exec|cp`, cli/served_ssh.h), where the libssh2 engine
// (ssh/fanout.h), which logs in with tpufleet's fleet key, has nothing to log in with.
//
// It speaks ssh/fanout.h's FanoutSink, so what the programs print reaches exec's output
// (cli/exec_output.h) exactly as the engine's does: each host's stdout and stderr as
// they arrive, then one HostResult per host, whose outcome is read from how ssh ended
// (255 and its last words: unreachable, login refused, host key not the pinned one).
//
// Costs: a process per host (10-60 ms of CPU each, STYLE.md rule 9), which is why the
// fleet's own commands use the engine; at most `max_parallel` run at once.
//
// Each program runs in a process group of its own, so the terminal's Ctrl-C reaches
// tpufleet (its InterruptWatch, polled through Cancelled()) and not the programs: a stop
// closes their stdin (exec's StoppableCommand then ends the remote command), then
// SIGTERMs the groups.
//
// Thread-safety: RunSshProcesses blocks its caller's thread and calls the sink there.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "ssh/fanout.h"
#include "util/status.h"

namespace tpufleet {

/// How often a run looks at its sink's Cancelled() while nothing else happens: a signal
/// already wakes it (poll's EINTR); this bounds the wait when one came just before.
inline constexpr std::chrono::milliseconds kSshProcessesCancelPoll{250};
/// The last bytes of a program's stderr kept to read why ssh failed.
inline constexpr size_t kSshProcessesStderrTail = 4096;

struct SshProcessJob {
  std::vector<std::vector<std::string>> programs;  // one argv per host (the sink's index)
  size_t max_parallel = kDefaultFanoutParallel;
  std::chrono::milliseconds timeout{0};  // per program, from its start; 0 = none
  /// Each program's stdin is a pipe held open until it ends, or the run is stopped
  /// (exec's StoppableCommand ends the remote command when it closes); false: /dev/null.
  bool hold_stdin = false;
  bool fail_fast = false;  // the first host that fails stops the others
};

/// Runs every program of `job`, at most max_parallel at once, handing their output and
/// results to `sink`; returns when every host has its result. An error only when none
/// could start at all (ssh is not installed: the hint to install OpenSSH).
Status RunSshProcesses(const SshProcessJob& job, FanoutSink& sink);

/// The HostResult of a program that ended with waitpid's `wait_status`, having written
/// `stderr_tail` last on its stderr.
HostResult SshProcessResult(int wait_status, std::string_view stderr_tail);

}  // namespace tpufleet
