#include <algorithm>
#include <cmath>
#include <iostream>
#include <ostream>

#include "cli/app.h"
#include "cli/command.h"
#include "cli/remote_command.h"
#include "cli/table.h"
#include "util/file.h"
#include "util/log.h"
#include "util/strings.h"

namespace tpufleet::cli {
namespace {

// Flags every command accepts, wherever they appear on the line.
const std::vector<FlagSpec>& GlobalFlags() {
  static const std::vector<FlagSpec> kFlags = {
      {"json", "", "print machine-readable JSON instead of text"},
      {"catalog", "FILE", "lay FILE over the built-in accelerator catalog"},
      {"server", "URL",
       "run the command on a team server (or TPUFLEET_SERVER; docs/serve.md): status, jobs, "
       "events, run, logs, cancel, top --once, audit, cost, up, down, users, import"},
      {"server-fingerprint", "SHA256:…", "the team server's certificate, pinned ahead of use"},
      {"help", "", "show this help"},
  };
  return kFlags;
}

const FlagSpec* FindFlag(const std::vector<FlagSpec>& flags, std::string_view name) {
  for (const FlagSpec& f : flags) {
    if (f.name == name) {
      return &f;
    }
  }
  return nullptr;
}

void PrintFlags(std::ostream& out, const std::vector<FlagSpec>& flags) {
  for (const FlagSpec& f : flags) {
    if (f.hidden) {
      continue;
    }
    std::string left = (f.letter != 0 ? std::string("-") + f.letter + ", " : "") + "--" + f.name +
                       (f.value_name.empty() ? "" : " " + f.value_name);
    out << "  " << left << std::string(left.size() < 24 ? 24 - left.size() : 1, ' ') << f.help
        << "\n";
  }
}

void PrintTopHelp(const App& app, std::ostream& out) {
  out << "tpufleet: bring up, reach and pay for fleets of Cloud TPU VMs.\n\n"
         "Usage: tpufleet COMMAND [ARGS] [--json] [--catalog FILE] [--server URL]\n\n"
         "Commands:\n";
  for (const Command& c : app.commands) {
    if (c.hidden) {
      continue;
    }
    out << "  " << c.name << std::string(c.name.size() < 12 ? 12 - c.name.size() : 1, ' ')
        << c.summary << "\n";
  }
  out << "  help        Show this list, or a command's help: tpufleet help COMMAND\n"
         "\nRun 'tpufleet COMMAND --help' for a command's arguments and flags.\n"
         "With --server URL (or TPUFLEET_SERVER), status, jobs, events, run, logs, cancel,\n"
         "top --once, audit, cost, and (for a fleet's admins) up, down and users run on a team\n"
         "server, as your role there allows (docs/serve.md).\n";
}

void PrintCommandHelp(std::ostream& out, const Command& c) {
  out << "Usage: tpufleet " << c.name << (c.usage.empty() ? "" : " " + c.usage) << "\n\n"
      << c.summary << "\n";
  if (!c.details.empty()) {
    out << "\n" << c.details << "\n";
  }
  out << "\nFlags:\n";
  PrintFlags(out, c.flags);
  std::vector<FlagSpec> globals;
  for (const FlagSpec& g : GlobalFlags()) {
    if (g.name != "json" || c.prints_data) {
      globals.push_back(g);
    }
  }
  PrintFlags(out, globals);
}

const Command* FindCommand(const App& app, std::string_view name) {
  for (const Command& c : app.commands) {
    if (c.name == name) {
      return &c;
    }
  }
  return nullptr;
}

// The flag of command `name` spelled -`letter`, or null.
const FlagSpec* FindLetter(const App& app, const std::string& name, char letter) {
  const Command* cmd = FindCommand(app, name);
  if (cmd == nullptr) {
    return nullptr;
  }
  for (const FlagSpec& f : cmd->flags) {
    if (f.letter == letter) {
      return &f;
    }
  }
  return nullptr;
}

std::vector<std::string> CommandNames(const App& app) {
  std::vector<std::string> names;
  for (const Command& c : app.commands) {
    if (!c.hidden) {
      names.push_back(c.name);
    }
  }
  names.push_back("help");
  return names;
}

// Splits argv into the command's name and its Args. Flags before the command's name
// can only be global ones; after it, the command's own flags are known too.
Status ParseArgs(const App& app, const std::vector<std::string>& argv, std::string* name,
                 Args* args) {
  bool flags_done = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (flags_done || a.size() < 2 || a[0] != '-') {
      if (name->empty()) {
        *name = a;
      } else {
        args->positional.push_back(a);
      }
      continue;
    }
    if (a == "--") {
      flags_done = true;
      args->after_dashdash = args->positional.size();
      continue;
    }
    if (a == "-h") {
      args->values["help"] = "";
      continue;
    }
    std::string flag;
    if (const FlagSpec* lettered = a.size() == 2 ? FindLetter(app, *name, a[1]) : nullptr) {
      flag = lettered->name;
    } else if (a[1] != '-') {
      return InvalidArgumentError("unknown flag '" + a + "' (flags are spelled --name)");
    } else {
      flag = a.substr(2);
    }
    std::optional<std::string> value;
    if (size_t eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    }
    const Command* cmd = FindCommand(app, *name);
    const FlagSpec* spec = FindFlag(GlobalFlags(), flag);
    if (spec == nullptr && cmd != nullptr) {
      spec = FindFlag(cmd->flags, flag);
    }
    if (spec == nullptr) {
      // Spelled with dashes, so the suggestion can be typed as shown.
      std::vector<std::string> known;
      for (const FlagSpec& f : GlobalFlags()) {
        known.push_back("--" + f.name);
      }
      if (cmd != nullptr) {
        for (const FlagSpec& f : cmd->flags) {
          known.push_back("--" + f.name);
        }
      }
      std::string where = cmd ? " for '" + cmd->name + "'" : "";
      return InvalidArgumentError("unknown flag '--" + flag + "'" + where +
                                  DidYouMean("--" + flag, known));
    }
    if (spec->value_name.empty()) {
      if (value) {
        return InvalidArgumentError("--" + flag + " takes no value");
      }
      args->values[flag] = "";
      continue;
    }
    if (!value) {
      if (i + 1 >= argv.size()) {
        return InvalidArgumentError("--" + flag + " needs a value (" + spec->value_name + ")");
      }
      value = argv[++i];
    }
    args->values[flag] = *value;
    args->all_values[flag].push_back(*value);
  }
  return Status::Ok();
}

}  // namespace

std::optional<std::string> Args::Get(std::string_view flag) const {
  auto it = values.find(std::string(flag));
  if (it == values.end()) {
    return std::nullopt;
  }
  return it->second;
}

Result<std::string> Invocation::ReadInputFile(const std::string& path, size_t max_bytes) {
  if (served) {
    auto it = files.find(path);
    if (it == files.end()) {
      return FailedPreconditionError(
          QuoteForMessage(path) + " was not sent with the command: a team server reads the "
          "files a command names from its client only, never from its own disk");
    }
    if (it->second.size() > max_bytes) {
      return InvalidArgumentError(path + ": the file is " + FormatBytes(it->second.size()) +
                                  "; at most " + FormatBytes(max_bytes) + " is read");
    }
    return it->second;
  }
  if (path != "-") {
    return ReadFile(path, max_bytes);
  }
  // One byte past the limit is enough to know it is over.
  std::string text(max_bytes + 1, '\0');
  std::cin.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(std::cin.gcount()));
  if (text.size() > max_bytes) {
    return InvalidArgumentError("-: stdin holds more than " + FormatBytes(max_bytes) +
                                ", the most that is read");
  }
  return text;
}

Result<FleetSpec> Invocation::LoadFleetSpec(const std::string& path) {
  // Bounded: `validate /dev/zero` must stop at the limit, not read for ever.
  Result<std::string> text = ReadInputFile(path, kMaxSpecBytes);
  if (!text.ok()) {
    return text.status().WithContext("reading the fleet spec");
  }
  TPUFLEET_ASSIGN_OR_RETURN(const Catalog* catalog, LoadCatalog());
  return ParseFleetSpec(*text, path, *catalog);
}

Result<const Catalog*> Invocation::LoadCatalog() {
  if (catalog_) {
    return &*catalog_;
  }
  TPUFLEET_ASSIGN_OR_RETURN(Catalog catalog,
                            ParseCatalog(BuiltinCatalogYaml(), "built-in catalog"));
  std::optional<std::string> path = catalog_path;
  bool must_exist = path.has_value();
  if (!path && !env["TPUFLEET_CATALOG"].empty()) {
    path = env["TPUFLEET_CATALOG"];
    must_exist = true;
  }
  if (!path) {
    if (env.count("XDG_CONFIG_HOME") && !env["XDG_CONFIG_HOME"].empty()) {
      path = env["XDG_CONFIG_HOME"] + "/tpufleet/catalog.yaml";
    } else if (env.count("HOME")) {
      path = env["HOME"] + "/.config/tpufleet/catalog.yaml";
    }
  }
  if (path) {
    Result<std::string> text = ReadFile(*path, kMaxSpecBytes);  // a catalog is smaller
    if (text.ok()) {
      TPUFLEET_ASSIGN_OR_RETURN(catalog, ParseCatalog(*text, *path, catalog));
    } else if (must_exist || text.status().code() != StatusCode::kNotFound) {
      return text.status().WithContext("reading the catalog override");
    }
  }
  catalog_ = std::move(catalog);
  return &*catalog_;
}

// The message may carry the API's or a worker's words: shown as text, never as
// terminal controls.
ExitStatus Fail(Invocation& inv, const Status& status) {
  inv.err << "tpufleet: error: " << TerminalText(status.message()) << "\n";
  return ExitStatus::kFailure;
}

ExitStatus UsageError(Invocation& inv, std::string_view message) {
  inv.err << "tpufleet: " << message << "\n";
  return ExitStatus::kUsage;
}

Status RequireAdminOf(const Invocation& inv, std::string_view fleet, std::string_view what) {
  if (inv.access.IsAdminOf(fleet)) {
    return Status::Ok();
  }
  return PermissionDeniedError(std::string(what) + " needs an admin of fleet " +
                               std::string(fleet) + " (or the team server's operator); " +
                               inv.access.who() + " is not one");
}

std::optional<std::chrono::seconds> DurationFlag(Invocation& inv, std::string_view flag,
                                                 std::chrono::seconds fallback) {
  std::optional<std::string> v = inv.args.Get(flag);
  if (!v) {
    return fallback;
  }
  Result<std::chrono::seconds> d = ParseDuration(*v);
  if (!d.ok() || d->count() <= 0) {
    UsageError(inv, "--" + std::string(flag) + ": expected a duration such as 90s, 30m or 2h, "
                    "got " + QuoteForMessage(*v));
    return std::nullopt;
  }
  return *d;
}

std::optional<double> NumberFlag(Invocation& inv, std::string_view flag, double fallback,
                                 double min, double max) {
  std::optional<std::string> text = inv.args.Get(flag);
  if (!text) {
    return fallback;
  }
  double v = 0;
  if (!ParseDouble(*text, &v) || v < min) {
    UsageError(inv, "--" + std::string(flag) + " expects a number of at least " +
                        FormatNumber(min, 6) + ", got '" + *text + "'");
    return std::nullopt;
  }
  if (v > max) {
    UsageError(inv, "--" + std::string(flag) + " expects a number of at most " +
                        FormatNumber(max, 6) + ", got '" + *text + "'");
    return std::nullopt;
  }
  return v;
}

ExitStatus Main(const App& app, const std::vector<std::string>& argv, std::ostream& out,
                std::ostream& err, const std::map<std::string, std::string>& env,
                Terminal terminal, Access access, bool served,
                const std::atomic<bool>* interrupt, std::map<std::string, std::string> files) {
  std::string name;
  Args args;
  Status parsed = ParseArgs(app, argv, &name, &args);
  Invocation inv(app, out, err, std::move(args), env, terminal, std::move(access), served);
  inv.interrupt = interrupt;
  inv.files = std::move(files);
  if (!parsed.ok()) {
    return UsageError(inv, parsed.message() + "\nRun 'tpufleet " +
                               (name.empty() ? "help" : name + " --help") + "' for usage.");
  }
  if (name.empty() || name == "help") {
    if (name == "help" && !inv.args.positional.empty()) {
      if (const Command* c = FindCommand(app, inv.args.positional[0])) {
        PrintCommandHelp(out, *c);
        return ExitStatus::kOk;
      }
      return UsageError(inv, "unknown command '" + inv.args.positional[0] + "'" +
                                 DidYouMean(inv.args.positional[0], CommandNames(app)));
    }
    PrintTopHelp(app, name.empty() && !inv.args.Has("help") ? err : out);
    return name.empty() && !inv.args.Has("help") ? ExitStatus::kUsage : ExitStatus::kOk;
  }
  const Command* cmd = FindCommand(app, name);
  if (cmd == nullptr) {
    return UsageError(inv, "unknown command '" + name + "'" + DidYouMean(name, CommandNames(app)) +
                               "\nRun 'tpufleet help' for the list of commands.");
  }
  if (inv.args.Has("help")) {
    PrintCommandHelp(out, *cmd);
    return ExitStatus::kOk;
  }
  inv.json = inv.args.Has("json");
  if (inv.json && !cmd->prints_data) {
    return UsageError(inv, "'" + cmd->name + "' prints no data; --json does not apply");
  }
  inv.catalog_path = inv.args.Get("catalog");
  inv.command = cmd->name;
  if (std::optional<ExitStatus> remote = RunOnServer(inv, *cmd, argv)) {
    return *remote;
  }
  return cmd->run(inv);
}

}  // namespace tpufleet::cli
