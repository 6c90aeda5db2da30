// App: what one tpufleet process carries for its life, built in main and lent to every
// command through its Invocation: the command rows and the world factory. There is no
// process-wide table or factory: a test builds its own App, and a process that runs
// for weeks (the reconciler, the server) builds one and runs many commands on it.
//
// Thread-safety: build it before the first command and leave it unchanged; commands
// read it, and the factory must be safe to call from several threads at once.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/fleet_world.h"
#include "cli/serve_command.h"

namespace tpufleet {
class HttpClient;  // util/http_client.h
}  // namespace tpufleet

namespace tpufleet::cli {

struct App {
  /// Every subcommand, in the order `help` lists them: CliCommands() and the rows main
  /// adds (the emulator's, the holder's).
  std::vector<Command> commands;
  /// Opens the fleet's world for a command (see fleet_world.h); null in a build that
  /// has no fleet state, whose fleet commands then fail with that message.
  WorldFactory open_world;
  /// Starts `tpufleet ARGS…` detached (a session of its own, no terminal, output appended
  /// to `log`): how `run` starts its gang watcher. Null where nothing may be started (a
  /// test, a build without jobs); `run` then says the gang rule holds only while
  /// `jobs` or `logs -f` look.
  std::function<Status(const std::vector<std::string>& args, const std::string& log)>
      start_detached = nullptr;
  /// Builds what `serve` runs (cli/serve_command.h); null in a build without it, where
  /// `serve` says so.
  ServeEngineFactory serve = nullptr;
  /// The transport to a team server (--server, cli/remote_command.h); null in a build
  /// without one, where --server says so.
  HttpClient* server_http = nullptr;
};

/// The CLI's own rows (catalog … forward), in help order; command_table.cc.
std::vector<Command> CliCommands();

/// Runs the CLI on argv[1..] (no program name) with `app`'s commands. `env` holds the
/// variables it may read; `access`, what the command may show and do (a team server's
/// caller; by default everything, as for whoever runs it here); `served`, that a team
/// server runs it for a client (Invocation::served), with the `files` the client sent
/// (Invocation::files) and `interrupt` the flag it sets once the client went away
/// (Invocation::interrupt).
ExitStatus Main(const App& app, const std::vector<std::string>& argv, std::ostream& out,
                std::ostream& err, const std::map<std::string, std::string>& env,
                Terminal terminal = {}, Access access = Access::Everything("local"),
                bool served = false, const std::atomic<bool>* interrupt = nullptr,
                std::map<std::string, std::string> files = {});

}  // namespace tpufleet::cli
