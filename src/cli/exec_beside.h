// Commands whose libraries the everyday CLI does not load: `emulator` (the emulator's
// HTTP server and worker hosts) and `serve` (the reconciler and its HTTP API). Loading
// cpp-httplib and what it pulls in tripled the start-up time of `tpufleet catalog`
// (bench/RESULTS.md), so tpufleet hands such a command to the program installed beside
// it, which parses the same command row again and runs it in the same process.
#pragma once

#include "cli/command.h"

namespace tpufleet::cli {

/// Replaces this process with `program` (tpufleet-emulator, tpufleet-serve) from
/// tpufleet's own directory, passing the parsed arguments on: every flag with each of
/// its values (--catalog and --json too), then the positional ones. Its argv[0] is its
/// full path. The pid stays, so a lock file, a service manager or a script that started
/// `tpufleet serve` still finds the command by its pid. Returns only when the exec
/// failed, with one message naming the program.
ExitStatus ExecBeside(Invocation& inv, const char* program);

}  // namespace tpufleet::cli
