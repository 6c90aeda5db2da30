// tpufleet-emulator: the local Cloud TPU. `tpufleet emulator ARGS` execs
// `tpufleet-emulator ARGS`; `tpufleet-emulator serve` is the daemon itself.
#include <string>
#include <vector>

#include "app/emulator_command.h"
#include "app/run_cli.h"
#include "cli/app.h"

int main(int argc, char** argv) {
  // No world factory: the emulator keeps no fleet.
  tpufleet::cli::App app{tpufleet::cli::CliCommands(), nullptr};
  app.commands.push_back(tpufleet::app::EmulatorCommandRow(tpufleet::app::RunEmulatorHere));
  std::vector<std::string> args = {"emulator"};
  args.insert(args.end(), argv + 1, argv + argc);
  return tpufleet::app::RunCli(app, args);
}
