// How the agent runs the host's administration programs (useradd, visudo): found by
// absolute path in the system directories, never through a PATH a caller set, with an
// environment of PATH alone, and a bounded share of their output kept for the message.
//
// Thread-safety: stateless.
#pragma once

#include <string>

#include "util/subprocess.h"

namespace tpufleet::agent::host {

/// The path of `name` in /usr/sbin, /usr/bin, /sbin or /bin (the first that has it and
/// may execute it); "" when none does.
std::string FindSystemProgram(const std::string& name);

/// The options such a program runs with: PATH alone, the last 4 KiB of output.
SpawnOptions SystemProgramOptions();

}  // namespace tpufleet::agent::host
