// The `emulator` command: its row of the command table (flags, help) and the handler
// tpufleet gives it, which execs the tpufleet-emulator binary installed next to it.
// tpufleet-emulator gives the same row its own handler (src/app/emulator_main.cc, over
// emulator/command.h), so the emulator's libraries load only when it is used: loading
// them tripled the start-up time of `tpufleet catalog`. The row is not in the command
// table; each main adds it with AddCommands.
#pragma once

#include "cli/command.h"

namespace tpufleet::cli {

/// The row, with `run` as its handler.
Command EmulatorCommandRow(ExitStatus (*run)(Invocation&));

/// Replaces this process with tpufleet-emulator, passing the parsed arguments on
/// (--catalog too: the emulator's catalog is the CLI's).
ExitStatus ExecEmulator(Invocation& inv);

}  // namespace tpufleet::cli
