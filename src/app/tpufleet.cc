// tpufleet: the command-line entry point. Wiring only: the CLI's logic is in src/cli.
#include <string>
#include <vector>

#include "app/fleet_world.h"
#include "app/holder_command.h"
#include "app/run_cli.h"
#include "cli/emulator_row.h"

int main(int argc, char** argv) {
  tpufleet::cli::SetWorldFactory(tpufleet::app::OpenFleetWorld);
  tpufleet::cli::AddCommands({tpufleet::cli::EmulatorCommandRow(tpufleet::cli::ExecEmulator),
                              tpufleet::app::HolderCommandRow()});
  return tpufleet::app::RunCli(std::vector<std::string>(argv + 1, argv + argc));
}
