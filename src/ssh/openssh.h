// Running OpenSSH's own programs (ssh, ssh-keygen, ssh-keyscan) as the user's commands.
//
// RunOpenSsh is util/subprocess.h's RunUserCommand (argv[0] from $PATH, no shell, the
// caller's environment, a process group of its own, always reaped, the last
// kMaxProgramOutput bytes kept) plus the hint a missing OpenSSH deserves.
//
// Thread-safety: stateless; safe from any thread (posix_spawn, never fork).
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"
#include "util/subprocess.h"

namespace tpufleet {

/// RunUserCommand(argv, input, timeout): a non-zero exit is a ProgramResult;
/// FailedPrecondition, saying to install OpenSSH, when argv[0] is not installed; Timeout
/// when it ran past `timeout` (its process group is killed first); Internal when a pipe
/// or the spawn fails.
/// `s` with that hint added when it is the FailedPrecondition of a program not
/// installed; any other status as it is (for callers that spawn ssh themselves).
Status WithOpenSshHint(const Status& s);

/// The last non-empty line of what ssh printed (where it says why it failed), at most
/// 1 KiB of it; `fallback` when there is none.
std::string LastSshLine(std::string_view output, std::string_view fallback);

Result<ProgramResult> RunOpenSsh(const std::vector<std::string>& argv, std::string_view input,
                                 std::chrono::milliseconds timeout);

}  // namespace tpufleet
