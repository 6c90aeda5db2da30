// tpufleet: the command-line entry point. Wiring only: the CLI's logic is in src/cli.
// `emulator` and `serve` run in programs of their own (cli/exec_beside.h).
#include <string>
#include <vector>

#include "app/fleet_world.h"
#include "app/holder_command.h"
#include "app/run_cli.h"
#include "cli/app.h"
#include "cli/emulator_row.h"
#include "cli/exec_beside.h"
#include "util/http_client.h"

namespace {

tpufleet::cli::ExitStatus ExecEmulator(tpufleet::cli::Invocation& inv) {
  return tpufleet::cli::ExecBeside(inv, "tpufleet-emulator");
}

tpufleet::cli::ExitStatus ExecServe(tpufleet::cli::Invocation& inv) {
  return tpufleet::cli::ExecBeside(inv, "tpufleet-serve");
}

}  // namespace

int main(int argc, char** argv) {
  tpufleet::app::FleetWorlds worlds;
  tpufleet::cli::App app{tpufleet::cli::CliCommands(), worlds.Factory(),
                         tpufleet::app::StartCliDetached};
  app.commands.push_back(tpufleet::cli::EmulatorCommandRow(ExecEmulator));
  app.commands.push_back(tpufleet::app::HolderCommandRow());
  app.commands.push_back(tpufleet::cli::ServeCommandRow(ExecServe));
  tpufleet::CurlHttpClient server_http;  // --server's transport (libcurl loaded on use)
  app.server_http = &server_http;
  return tpufleet::app::RunCli(app, std::vector<std::string>(argv + 1, argv + argc));
}
