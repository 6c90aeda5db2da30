// The actions of `tpufleet emulator …` (start, stop, status, inject, token, serve), run by the
// tpufleet-emulator binary: they start, stop, show and inject faults into the local
// Cloud TPU. They take the command line as plain values, so the emulator needs nothing
// of the CLI; src/app/emulator_main.cc hands them an Invocation's parts.
//
// Process model: `start` runs `tpufleet-emulator serve` as a daemon (its own session,
// output to <state dir>/emulator.log) and waits until it has written
// <state dir>/daemon.json, which names its pid and endpoint; before that the daemon
// writes a fresh secret to <state dir>/token (0600, the owner's: locator.h), which every
// request must carry. `stop` ends the daemon (SIGTERM, then SIGKILL), cleans what a
// crashed one could leave (NamespaceHosts::CleanStale), and removes the state dir.
// `status`, `inject` and `token rotate` talk to the daemon's admin endpoints
// (/emulator/v1/...) with that token; `token rotate` has the daemon write a new secret
// to <state dir>/token and refuse the old one from then on, as a revoked credential is.
//
// Thread-safety: one action per process, on the main thread.
#pragma once

#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/catalog.h"
#include "util/status.h"

namespace tpufleet::emulator {

/// An action's command line, parsed.
struct CommandLine {
  std::vector<std::string> positional;       // the action first: "start", "inject", …
  std::map<std::string, std::string> flags;  // flag (no dashes) -> value ("" for booleans)
  bool json = false;                         // --json: machine-readable output on `out`
  /// --catalog FILE when given: `start` passes it on to the daemon (as an absolute path).
  std::optional<std::string> catalog_path;
  /// The catalog the CLI would use (the built-in one with --catalog or the user's
  /// override laid over it). `start` checks it before the daemon starts; `serve` serves
  /// its types.
  std::function<Result<const Catalog*>()> load_catalog;
  std::map<std::string, std::string> env;  // the environment variables the CLI reads
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;  // warnings; the caller prints the returned error
};

/// How an action ended: OK, a failure (exit 1), or a usage error (exit 2) when `usage`.
struct ActionResult {
  ActionResult(Status s) : status(std::move(s)) {}  // NOLINT: a Status is a result
  ActionResult(Status s, bool is_usage) : status(std::move(s)), usage(is_usage) {}
  Status status;
  bool usage = false;
};

/// Runs the action `line.positional[0]` names.
/// REQUIRES: line.out and line.err are set.
ActionResult RunEmulatorAction(const CommandLine& line);

}  // namespace tpufleet::emulator
