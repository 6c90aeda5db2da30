// The ssh module's thin layer over POSIX: running OpenSSH's programs (ssh, ssh-keygen)
// without a shell. (The private directories keys and configs live in are made by
// util/file.h's MakePrivateDirs, which this header brings along.)
//
// RunProgram is util/subprocess.h's RunSubprocess with the policy OpenSSH wants: argv[0]
// is looked up in $PATH, no argument is ever parsed by a shell, the program inherits the
// caller's environment (ssh needs HOME and SSH_AUTH_SOCK), it gets a process group of
// its own, so a timeout kills whatever it started too (a ProxyCommand, say), and it is
// always reaped before RunProgram returns.
//
// Thread-safety: stateless; safe from any thread (posix_spawn, never fork).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "util/file.h"  // MakePrivateDirs, for the directories keys and configs live in
#include "util/status.h"
#include "util/subprocess.h"

namespace tpufleet {

/// How much of a program's output is kept: a runaway script must not fill memory, and
/// the end is what explains a failure.
inline constexpr size_t kMaxProgramOutput = 64 * 1024;

/// exit_code: the exit status, or 128 + signal when it was killed by one; output: stdout
/// and stderr interleaved, the last kMaxProgramOutput bytes.
using ProgramResult = SubprocessResult;

/// Runs argv (argv[0] looked up in PATH) with `input` on its stdin and waits for it. A
/// non-zero exit is a ProgramResult. FailedPrecondition when argv[0] is not installed;
/// Timeout when it ran past `timeout` (its process group is killed first); Internal when
/// a pipe or the spawn fails.
Result<ProgramResult> RunProgram(const std::vector<std::string>& argv, std::string_view input,
                                 std::chrono::milliseconds timeout);

}  // namespace tpufleet
