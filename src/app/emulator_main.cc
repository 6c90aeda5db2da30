// tpufleet-emulator: the local Cloud TPU. `tpufleet emulator ARGS` execs
// `tpufleet-emulator ARGS`; `tpufleet-emulator serve` is the daemon itself. Wiring
// only: the actions are emulator/command.h's; this hands them the parsed command line.
#include <string>
#include <vector>

#include "app/run_cli.h"
#include "cli/app.h"
#include "cli/emulator_row.h"
#include "emulator/command.h"

namespace {

tpufleet::cli::ExitStatus RunEmulatorHere(tpufleet::cli::Invocation& inv) {
  tpufleet::emulator::CommandLine line;
  line.positional = inv.args.positional;
  line.flags = inv.args.values;
  line.json = inv.json;
  line.catalog_path = inv.catalog_path;
  line.load_catalog = [&inv] { return inv.LoadCatalog(); };
  line.env = inv.env;
  line.out = &inv.out;
  line.err = &inv.err;
  tpufleet::emulator::ActionResult r = tpufleet::emulator::RunEmulatorAction(line);
  if (r.status.ok()) {
    return tpufleet::cli::ExitStatus::kOk;
  }
  return r.usage ? tpufleet::cli::UsageError(inv, r.status.message())
                 : tpufleet::cli::Fail(inv, r.status);
}

}  // namespace

int main(int argc, char** argv) {
  // No world factory: the emulator keeps no fleet.
  tpufleet::cli::App app{tpufleet::cli::CliCommands(), nullptr};
  app.commands.push_back(tpufleet::cli::EmulatorCommandRow(RunEmulatorHere));
  std::vector<std::string> args = {"emulator"};
  args.insert(args.end(), argv + 1, argv + argc);
  return tpufleet::app::RunCli(app, args);
}
