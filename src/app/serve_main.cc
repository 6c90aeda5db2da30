// tpufleet-serve: `tpufleet serve ARGS` execs `tpufleet-serve ARGS` (cli/exec_beside.h),
// so that only this program loads the reconciler, the HTTP API and cpp-httplib. Wiring
// only: the command is cli/serve_command.h's, its engine app/serve_engine.h's.
#include <string>
#include <vector>

#include "app/fleet_world.h"
#include "app/holder_command.h"
#include "app/run_cli.h"
#include "app/serve_engine.h"
#include "cli/app.h"

int main(int argc, char** argv) {
  tpufleet::app::FleetWorlds worlds;
  tpufleet::cli::App app{tpufleet::cli::CliCommands(), worlds.Factory(),
                         tpufleet::app::StartCliDetached};
  app.commands.push_back(tpufleet::cli::ServeCommandRow(tpufleet::cli::RunServe));
  app.serve = [&worlds](tpufleet::cli::Invocation& inv, tpufleet::cli::ServeSettings settings) {
    return tpufleet::app::MakeServeEngine(worlds, inv, std::move(settings));
  };
  std::vector<std::string> args = {"serve"};
  args.insert(args.end(), argv + 1, argv + argc);
  return tpufleet::app::RunCli(app, args);
}
