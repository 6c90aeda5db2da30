// tpufleet: the command-line entry point. Wiring only: the CLI's logic is in src/cli.
#include <string>
#include <vector>

#include "app/fleet_world.h"
#include "app/holder_command.h"
#include "app/run_cli.h"
#include "app/serve_engine.h"
#include "cli/app.h"
#include "cli/emulator_row.h"

int main(int argc, char** argv) {
  tpufleet::app::FleetWorlds worlds;
  tpufleet::cli::App app{tpufleet::cli::CliCommands(), worlds.Factory(),
                         tpufleet::app::StartSelfDetached};
  app.commands.push_back(tpufleet::cli::EmulatorCommandRow(tpufleet::cli::ExecEmulator));
  app.commands.push_back(tpufleet::app::HolderCommandRow());
  app.commands.push_back(tpufleet::cli::ServeCommandRow());
  app.serve = [&worlds](tpufleet::cli::Invocation& inv, tpufleet::cli::ServeSettings settings) {
    return tpufleet::app::MakeServeEngine(worlds, inv, std::move(settings));
  };
  return tpufleet::app::RunCli(app, std::vector<std::string>(argv + 1, argv + argc));
}
