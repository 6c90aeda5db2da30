// Running the machine's system programs (ip, ssh-keygen, useradd, …) without a shell.
//
// These are util/subprocess.h with the policy a root daemon wants. Every command is an
// argv array handed to posix_spawn: no string ever reaches a shell, so user names and
// keys from metadata cannot inject anything. Programs are looked up in the system
// directories, never through $PATH, and run with a minimal environment (the caller's
// may hold credentials), a clean signal mask and no inherited descriptors beyond
// stdin/stdout/stderr. All of a command's output is kept.
//
// Also here: Reaped and Errno, two small helpers all the worker-host code shares.
//
// Thread-safety: stateless; safe from any thread (posix_spawn is safe in a threaded
// process, unlike fork followed by arbitrary code).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "util/status.h"
#include "util/subprocess.h"

namespace tpufleet::emulator::hosts {

/// How long a helper command may run before it is killed: `ip -batch` for a few hundred
/// veths takes well under a second, useradd a few milliseconds; ten seconds means hung.
inline constexpr std::chrono::milliseconds kDefaultCommandTimeout{10'000};

/// The directories searched for programs, in order.
inline constexpr const char* kSystemPath =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The absolute path of the system program `name`, or FailedPrecondition naming the
/// Debian package to install (`package`, when given).
Result<std::string> FindProgram(const std::string& name, const std::string& package = "");

/// Starts argv (argv[0] an absolute path) as described above, with PATH=kSystemPath
/// and `env` ("NAME=value") as its whole environment, and returns its pid at once.
/// The caller reaps it. SpawnStdio is util's: stdin from /dev/null unless given.
Result<pid_t> SpawnProgram(const std::vector<std::string>& argv, SpawnStdio stdio,
                           const std::vector<std::string>& env = {});

/// Runs argv (argv[0] an absolute path) with `input` on stdin, PATH=kSystemPath and
/// LC_ALL=C, and waits for it. An error only when it could not be started or ran past
/// `timeout` (then it is killed, not the processes it started); a non-zero exit is a
/// ProgramResult, with all of its output.
Result<ProgramResult> RunCommand(const std::vector<std::string>& argv,
                                 const std::string& input = "",
                                 std::chrono::milliseconds timeout = kDefaultCommandTimeout);

/// RunCommand, and Internal ("<program> failed (exit N): <output>") unless it exits 0.
Status RunChecked(const std::vector<std::string>& argv, const std::string& input = "",
                  std::chrono::milliseconds timeout = kDefaultCommandTimeout);

/// Reaps `pid` if it is our child and has exited. True when it is gone (or not ours).
bool Reaped(pid_t pid);

/// "<what>: <strerror(errno)>", for the system call that just failed.
std::string Errno(const std::string& what);

}  // namespace tpufleet::emulator::hosts
