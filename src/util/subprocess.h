// Starting programs without a shell, and running one to completion with a deadline.
//
// Every program is an argv vector handed to posix_spawn(p): no argument is ever parsed
// by a shell, so names and keys that came from outside cannot inject anything. The child
// starts with a clean signal mask and default signal actions. What differs between
// callers is policy, and SpawnOptions says it: where argv[0] is looked up, which
// environment the child gets, whether it leads a process group of its own (so that a
// timeout kills whatever it started too), whether descriptors the caller forgot to mark
// close-on-exec reach it, and how much of its output is kept.
//
// RunSubprocess always reaps the program before it returns, also on a timeout.
// SpawnSubprocess leaves reaping to the caller. ExecProgram replaces this process.
// RunUserCommand is RunSubprocess with the policy of a command the user could have typed
// (OpenSSH's ssh, ssh-keygen, ssh-keyscan; tests' sh and tar). ProgramResult is what
// every finished program leaves, local or remote (ssh/runner.h returns it too).
//
// Thread-safety: stateless; safe from any thread (posix_spawn, never fork followed by
// arbitrary code). RunSubprocess blocks SIGPIPE in the calling thread while it writes.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"
#include "util/unique_fd.h"

namespace tpufleet {

/// How a program is started. The defaults are the cautious choice for a program run on
/// the caller's behalf: an absolute path, an empty environment, nothing inherited.
struct SpawnOptions {
  /// True: an argv[0] without a slash is looked up in this process's $PATH. False:
  /// argv[0] must be an absolute path (nothing a caller's PATH says can substitute it).
  bool search_path = false;
  /// True: the child gets this process's environment (and `env` must be empty). False:
  /// `env` is the child's whole environment.
  bool inherit_env = false;
  /// "NAME=value" strings; include PATH=… if the program starts others.
  std::vector<std::string> env;
  /// The child leads a new process group, and a timeout in RunSubprocess kills the whole
  /// group (helpers it started, a ProxyCommand, say), not just the child.
  bool own_process_group = false;
  /// Closes every descriptor above stderr in the child, also those the caller did not
  /// open with O_CLOEXEC.
  bool close_other_fds = true;
  /// RunSubprocess keeps only the last this many bytes of output (a runaway program must
  /// not fill memory, and the end is what explains a failure); 0 keeps everything.
  size_t output_cap = 0;
};

/// Where a spawned program's standard descriptors come from.
/// A pipe's two ends, both close-on-exec.
struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

/// A new pipe; the errno's Status when there is none to be had (out of descriptors).
Result<Pipe> MakePipe();

struct SpawnStdio {
  int input = -1;   // its stdin; -1: /dev/null
  int output = -1;  // its stdout and stderr; -1: this process's own
  int error = -1;   // its stderr when not `output`'s; -1: as `output` says
};

/// Starts argv as `options` say and returns its pid at once; the caller reaps it.
/// FailedPrecondition when argv[0] does not exist (not found in PATH, or no such file);
/// Internal when argv is empty, argv[0] should be absolute and is not, or the spawn
/// fails otherwise.
Result<pid_t> SpawnSubprocess(const std::vector<std::string>& argv, const SpawnOptions& options,
                              SpawnStdio stdio = {});

/// Replaces this process with argv, as a command typed at a shell would run: argv[0]
/// looked up in $PATH, this process's environment and descriptors (those not
/// close-on-exec), no signal blocked. Returns only when that fails: FailedPrecondition
/// when argv[0] is not installed, Internal otherwise. Output still buffered in this
/// process (std::cout) is lost: flush it first.
Status ExecProgram(const std::vector<std::string>& argv);

/// A finished program: how it ended and what it said.
struct ProgramResult {
  int exit_code = -1;  // the exit status, or 128 + signal when a signal killed it
  std::string output;  // stdout and stderr, interleaved as written (see output_cap)
};

/// Runs argv as `options` say, with `input` on its stdin, and waits until its output
/// ends and it exits. A non-zero exit is a ProgramResult. Errors as SpawnSubprocess;
/// Timeout when it ran past `timeout` (it, or its group, is killed with SIGKILL and
/// reaped first); Internal when a pipe cannot be made. A program that exits without
/// reading all of `input` is no error.
Result<ProgramResult> RunSubprocess(const std::vector<std::string>& argv, std::string_view input,
                                    std::chrono::milliseconds timeout, const SpawnOptions& options);

/// How much of a user command's output RunUserCommand keeps: a runaway script must not
/// fill memory, and the end is what explains a failure.
inline constexpr size_t kMaxProgramOutput = 64 * 1024;

/// Runs argv as a command the user typed would run: argv[0] looked up in $PATH, this
/// process's environment (ssh needs HOME and SSH_AUTH_SOCK), a process group of its own,
/// so a timeout kills whatever it started too (a ProxyCommand, say), and only the last
/// kMaxProgramOutput bytes of output kept. Errors as RunSubprocess: FailedPrecondition
/// when argv[0] is not installed, Timeout when it ran past `timeout`.
Result<ProgramResult> RunUserCommand(const std::vector<std::string>& argv, std::string_view input,
                                     std::chrono::milliseconds timeout);

}  // namespace tpufleet
