// The `emulator` command: its row of the CLI's command table (flags, help), which
// src/app adds to the table, and its two handlers. tpufleet's handler execs the
// tpufleet-emulator binary installed next to it; that binary's handler does the work
// (emulator_command.cc), so the emulator's libraries load only when it is used.
#pragma once

#include "cli/command.h"

namespace tpufleet::app {

/// The row, with `run` as its handler.
cli::Command EmulatorCommandRow(cli::ExitStatus (*run)(cli::Invocation&));

/// Replaces this process with tpufleet-emulator, passing the parsed arguments on.
cli::ExitStatus ExecEmulator(cli::Invocation& inv);

/// start, stop, status, inject and serve, in this process.
cli::ExitStatus RunEmulatorHere(cli::Invocation& inv);

}  // namespace tpufleet::app
