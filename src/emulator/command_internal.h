// What the emulator's actions (command.h) share: the command line as they read it,
// the state dir, the daemon's admin routes. command.cc has start, stop and serve;
// command_admin.cc status, inject and token. Not for other callers.
//
// Thread-safety: one action per process.
#pragma once

#include <chrono>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "api/emulator.h"
#include "emulator/command.h"
#include "emulator/locator.h"

namespace tpufleet::emulator::command_internal {

/// The command line as the actions read it.
struct Inv {
  explicit Inv(const CommandLine& l)
      : line(l), positional(l.positional), json(l.json), env(l.env), out(*l.out), err(*l.err) {}
  std::optional<std::string> Get(const std::string& flag) const {
    auto it = line.flags.find(flag);
    return it == line.flags.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
  const CommandLine& line;
  const std::vector<std::string>& positional;
  bool json;
  const std::map<std::string, std::string>& env;
  std::ostream& out;
  std::ostream& err;
};

/// A usage error (exit 2) saying `message`.
inline ActionResult Usage(const std::string& message) {
  return ActionResult(InvalidArgumentError(message), true);
}

/// --state-dir, else the default (locator.h).
inline std::string StateDir(const Inv& inv) {
  return EmulatorStateDir(inv.Get("state-dir"), inv.env);
}

/// What --json shows of the daemon `d` serving the state dir `dir`.
api::EmulatorDaemon ToApi(const EmulatorDaemon& d, const std::string& dir);

/// No daemon runs for `dir`: says so (as JSON with --json) and fails.
ActionResult NotRunning(Inv& inv, const std::string& dir);

ActionResult ShowStatus(Inv& inv);
ActionResult Inject(Inv& inv);
/// `token rotate`: the daemon makes a new token and writes it to STATE/token; the old
/// one is refused (401) from then on.
ActionResult Token(Inv& inv);

}  // namespace tpufleet::emulator::command_internal
