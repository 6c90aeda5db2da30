// The `emulator` command: its row of the command table (flags, help). tpufleet gives it
// ExecBeside (cli/exec_beside.h), which execs the tpufleet-emulator binary installed
// next to it; tpufleet-emulator gives the same row its own handler
// (src/app/emulator_main.cc, over emulator/command.h). The row is not in the command
// table; each main adds it with AddCommands.
#pragma once

#include "cli/command.h"

namespace tpufleet::cli {

/// The row, with `run` as its handler.
Command EmulatorCommandRow(ExitStatus (*run)(Invocation&));

}  // namespace tpufleet::cli
