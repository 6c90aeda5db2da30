// The CLI's command table and what a command handler gets.
//
// Every subcommand is one row of its App's table (cli/app.h: the CLI's own rows from
// command_table.cc, and the rows main adds): its name, a one-line summary, its usage,
// its flags, and a handler. `tpufleet help` prints the table; an unknown
// command or flag gets a "did you mean"; `--help` after any command prints its usage.
// Handlers write to the Invocation's streams (never to std::cout directly) so tests can
// run them in-process.
//
// Thread-safety: handlers run on the main thread.
#pragma once

#include <chrono>
#include <iosfwd>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/catalog.h"
#include "core/fleet_spec.h"
#include "util/status.h"

namespace tpufleet::cli {

struct App;  // cli/app.h

/// Process exit codes (STYLE rule 10).
enum class ExitStatus { kOk = 0, kFailure = 1, kUsage = 2, kInterrupted = 130 };

struct FlagSpec {
  std::string name;        // without dashes: "hours"
  std::string value_name;  // "H"; empty for a boolean flag
  std::string help;
  char letter = 0;         // also spelled -L, as people type it (`logs -f`); 0: none
  bool hidden = false;     // given by tpufleet itself (`jobs --watch`), not in --help
};

/// Flags and arguments after parsing.
struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> values;  // flag -> value ("" for booleans): the last
  /// Every value of each flag that takes one, in the order given (`--env A=1 --env B=2`).
  std::map<std::string, std::vector<std::string>> all_values;
  /// Where the words after `--` begin in `positional` (npos: there was no `--`), for
  /// commands that take a remote command: `exec pod -- ls -l`.
  size_t after_dashdash = std::string::npos;

  bool Has(std::string_view flag) const { return values.count(std::string(flag)) > 0; }
  std::optional<std::string> Get(std::string_view flag) const;
};

/// What the process is attached to, for commands that draw live progress or ask.
struct Terminal {
  bool out_is_terminal = false;  // stdout is a terminal: draw live lines
  std::istream* in = nullptr;    // stdin when it is a terminal (for questions), else null
};

/// Where a command runs: its App, streams, parsed arguments, and the global options.
struct Invocation {
  Invocation(const App& a, std::ostream& o, std::ostream& e, Args parsed,
             std::map<std::string, std::string> environment, Terminal t = {})
      : app(a), out(o), err(e), args(std::move(parsed)), env(std::move(environment)),
        terminal(t) {}

  const App& app;  // its commands and world factory, built in main (cli/app.h)
  std::string command;  // the command's name ("up"), once Main has found it
  std::ostream& out;
  std::ostream& err;
  Args args;
  bool json = false;                 // --json: machine-readable output on `out`
  std::optional<std::string> catalog_path;  // --catalog FILE
  std::map<std::string, std::string> env;   // the environment variables the CLI reads
  Terminal terminal;

  /// The built-in catalog with the user's override laid over it: --catalog FILE, else
  /// $TPUFLEET_CATALOG, else $XDG_CONFIG_HOME (or ~/.config)/tpufleet/catalog.yaml
  /// when that file exists. Parsed once per invocation.
  Result<const Catalog*> LoadCatalog();
  /// Reads and checks the fleet spec at `path` against LoadCatalog().
  Result<FleetSpec> LoadFleetSpec(const std::string& path);

 private:
  std::optional<Catalog> catalog_;
};

struct Command {
  std::string name;
  std::string summary;   // one line for `tpufleet help`
  std::string usage;     // "TYPE --hours H [--count N] [--spot]"
  std::string details;   // paragraphs for `tpufleet CMD --help`
  std::vector<FlagSpec> flags;
  bool prints_data = true;  // accepts --json
  ExitStatus (*run)(Invocation& inv);
  bool hidden = false;  // run by tpufleet's own files (ssh-proxy), not listed by `help`
};

// Helpers for handlers: print "tpufleet: error: …" and return the matching status.
ExitStatus Fail(Invocation& inv, const Status& status);
ExitStatus UsageError(Invocation& inv, std::string_view message);

/// Parses a numeric flag; nullopt (and an error printed) when present but malformed,
/// below `min` or above `max` (a bound keeps every figure computed from it finite and
/// printable). `fallback` when absent.
std::optional<double> NumberFlag(Invocation& inv, std::string_view flag, double fallback,
                                 double min, double max = std::numeric_limits<double>::max());

/// A duration flag such as --timeout 30m: `fallback` when absent; nullopt (and an error
/// printed) when malformed or not positive.
std::optional<std::chrono::seconds> DurationFlag(Invocation& inv, std::string_view flag,
                                                 std::chrono::seconds fallback);

// Handlers, one per command; defined in the *_command.cc files.
ExitStatus RunCatalog(Invocation& inv);
ExitStatus RunEstimate(Invocation& inv);
ExitStatus RunPlan(Invocation& inv);
ExitStatus RunValidate(Invocation& inv);
ExitStatus RunUp(Invocation& inv);
ExitStatus RunStatus(Invocation& inv);
ExitStatus RunDown(Invocation& inv);
ExitStatus RunImport(Invocation& inv);
ExitStatus RunExec(Invocation& inv);
ExitStatus RunCopy(Invocation& inv);
ExitStatus RunSsh(Invocation& inv);
ExitStatus RunForward(Invocation& inv);
ExitStatus RunSshProxy(Invocation& inv);
ExitStatus RunJobRun(Invocation& inv);
ExitStatus RunJobs(Invocation& inv);
ExitStatus RunLogs(Invocation& inv);
ExitStatus RunCancel(Invocation& inv);
ExitStatus RunAttach(Invocation& inv);
ExitStatus RunDoctor(Invocation& inv);
ExitStatus RunTop(Invocation& inv);

}  // namespace tpufleet::cli
