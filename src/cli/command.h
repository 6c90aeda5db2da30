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

#include <atomic>
#include <chrono>
#include <iosfwd>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "control/access.h"
#include "core/catalog.h"
#include "core/fleet_spec.h"
#include "util/clock.h"
#include "util/status.h"

namespace tpufleet::cli {

struct App;  // cli/app.h

/// Process exit codes (STYLE rule 10).
enum class ExitStatus { kOk = 0, kFailure = 1, kUsage = 2, kInterrupted = 130 };

/// Most bytes of an OpenSSH public key file (`users --key`): a few lines; 64 KiB is far
/// beyond any.
inline constexpr size_t kMaxKeyFileBytes = 64 << 10;

struct FlagSpec {
  std::string name;        // without dashes: "hours"
  std::string value_name;  // "H"; empty for a boolean flag
  std::string help;
  char letter = 0;         // also spelled -L, as people type it (`logs -f`); 0: none
  bool hidden = false;     // given by tpufleet itself (`jobs --watch`), not in --help
  /// Not 0: the value names a file the command reads (Invocation::ReadInputFile; "-":
  /// stdin), at most this many bytes. A client sends it with the command to a team
  /// server (cli/remote_command.h), which reads it from the request, never from its disk.
  size_t input_bytes = 0;
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
             std::map<std::string, std::string> environment, Terminal t = {},
             Access who = Access::Everything("local"), bool for_client = false)
      : app(a), out(o), err(e), args(std::move(parsed)), env(std::move(environment)),
        terminal(t), access(std::move(who)), served(for_client) {}

  const App& app;  // its commands and world factory, built in main (cli/app.h)
  std::string command;  // the command's name ("up"), once Main has found it
  std::ostream& out;
  std::ostream& err;
  Args args;
  bool json = false;                 // --json: machine-readable output on `out`
  std::optional<std::string> catalog_path;  // --catalog FILE
  std::map<std::string, std::string> env;   // the environment variables the CLI reads
  Terminal terminal;
  /// What the command may show and do: everything when run here; a team server's caller
  /// (control/access.h) when it runs for a client (RunServedCommand).
  Access access;
  /// Run by a team server for a client (RunServedCommand): its output streams to the
  /// client, top's live view is refused (full screen), and `run` says who started it
  /// "via" this machine.
  bool served = false;
  /// Served: set once the client went away (InterruptWatch watches it, not signals).
  const std::atomic<bool>* interrupt = nullptr;

  /// The files a team server's client sent with the command (api::CommandRequest), by
  /// the path as typed; served commands read only these (ReadInputFile).
  std::map<std::string, std::string> files;

  /// The file at `path` as the user named it (a FlagSpec or Command input): here, the
  /// file ("-": stdin), at most `max_bytes` (InvalidArgument beyond, as ReadFile);
  /// served, the one the client sent under `path`, and FailedPrecondition when it sent
  /// none: a served command never reads a file of the server's machine a client names.
  Result<std::string> ReadInputFile(const std::string& path, size_t max_bytes);
  /// The built-in catalog with the user's override laid over it: --catalog FILE, else
  /// $TPUFLEET_CATALOG, else $XDG_CONFIG_HOME (or ~/.config)/tpufleet/catalog.yaml
  /// when that file exists. Parsed once per invocation.
  Result<const Catalog*> LoadCatalog();
  /// Reads (ReadInputFile) and checks the fleet spec at `path` against LoadCatalog();
  /// messages name `path` as the user typed it.
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
  /// Not 0: the first positional argument names a file the command reads, at most this
  /// many bytes (up's FLEET.yaml); sent to a team server as FlagSpec::input_bytes says.
  size_t positional_input_bytes = 0;
};

// Helpers for handlers: print "tpufleet: error: …" and return the matching status.
ExitStatus Fail(Invocation& inv, const Status& status);
ExitStatus UsageError(Invocation& inv, std::string_view message);

/// OK when the caller may administer fleet `fleet` (Access::IsAdminOf: the operator, the
/// local user, an admin of it); else PermissionDenied in one line: "`what` needs an admin
/// of fleet FLEET (or the team server's operator); WHO is not one".
Status RequireAdminOf(const Invocation& inv, std::string_view fleet, std::string_view what);

/// Parses a numeric flag; nullopt (and an error printed) when present but malformed,
/// below `min` or above `max` (a bound keeps every figure computed from it finite and
/// printable). `fallback` when absent.
std::optional<double> NumberFlag(Invocation& inv, std::string_view flag, double fallback,
                                 double min, double max = std::numeric_limits<double>::max());

/// A duration flag such as --timeout 30m: `fallback` when absent; nullopt (and an error
/// printed) when malformed or not positive.
std::optional<std::chrono::seconds> DurationFlag(Invocation& inv, std::string_view flag,
                                                 std::chrono::seconds fallback);

/// A --since value as a time: a duration back from `now` ("30m") or an RFC 3339 time;
/// InvalidArgument naming both forms for anything else (events, audit).
Result<Clock::WallTime> SinceTime(const std::string& text, Clock::WallTime now);

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
ExitStatus RunEvents(Invocation& inv);
ExitStatus RunDoctor(Invocation& inv);
ExitStatus RunUsers(Invocation& inv);
ExitStatus RunTop(Invocation& inv);
ExitStatus RunAudit(Invocation& inv);
ExitStatus RunCost(Invocation& inv);

}  // namespace tpufleet::cli
