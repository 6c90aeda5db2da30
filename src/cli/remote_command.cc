#include "cli/remote_command.h"

#include <algorithm>
#include <array>
#include <ostream>

#include "cli/app.h"
#include "cli/interrupt_watch.h"
#include "cli/served_ssh.h"
#include "remote/joined_servers.h"
#include "remote/server_client.h"
#include "util/log.h"
#include "util/strings.h"

namespace tpufleet::cli {
namespace {

constexpr std::array<std::string_view, 13> kServed = {
    "status", "jobs", "events", "run", "logs", "cancel", "top", "audit",
    "cost",   "up",   "down",   "users", "import"};
// What a client is told the server runs, as kServed.
constexpr char kServedList[] =
    "status, jobs, events, run, logs, cancel, top --once, audit, cost, up, down, users and "
    "import";
constexpr std::array<std::string_view, 8> kLocal = {"catalog", "estimate", "plan",     "validate",
                                                    "doctor",  "serve",    "emulator", "join"};
// Flags a client may not send: they reach beyond the command (a file of the server's,
// another server, a watcher that runs for ever).
constexpr std::array<std::string_view, 3> kRefusedFlags = {"--catalog", "--server", "--watch"};

template <size_t N>
bool In(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// `argv` without --server URL, --server=URL and --server-fingerprint's likewise (before
// any `--`).
std::vector<std::string> WithoutServerFlags(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  bool flags_done = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    flags_done = flags_done || a == "--";
    if (!flags_done && (a == "--server" || a == "--server-fingerprint")) {
      ++i;  // and its value
      continue;
    }
    if (!flags_done && (StartsWith(a, "--server=") || StartsWith(a, "--server-fingerprint="))) {
      continue;
    }
    out.push_back(a);
  }
  return out;
}

// The files `cmd` reads (FlagSpec::input_bytes, Command::positional_input_bytes), read
// here to go with it, by the path as typed.
Result<std::map<std::string, std::string>> InputFiles(Invocation& inv, const Command& cmd) {
  std::vector<std::pair<std::string, size_t>> named;
  if (cmd.positional_input_bytes > 0 && !inv.args.positional.empty()) {
    named.emplace_back(inv.args.positional[0], cmd.positional_input_bytes);
  }
  for (const FlagSpec& f : cmd.flags) {
    auto values = inv.args.all_values.find(f.name);
    if (f.input_bytes > 0 && values != inv.args.all_values.end()) {
      for (const std::string& v : values->second) {
        named.emplace_back(v, f.input_bytes);
      }
    }
  }
  std::map<std::string, std::string> files;
  size_t bytes = 0;
  for (const auto& [path, max_bytes] : named) {
    if (files.count(path) > 0) {
      continue;
    }
    if (files.size() == api::kMaxCommandFiles) {
      return InvalidArgumentError("a command sends at most " +
                                  std::to_string(api::kMaxCommandFiles) +
                                  " files to a team server");
    }
    TPUFLEET_ASSIGN_OR_RETURN(std::string text, inv.ReadInputFile(path, max_bytes));
    bytes += text.size();
    if (bytes > api::kMaxCommandFileBytes) {
      return InvalidArgumentError("the files of the command come to more than " +
                                  FormatBytes(api::kMaxCommandFileBytes) +
                                  ", the most a team server takes");
    }
    files[path] = std::move(text);
  }
  return files;
}

ExitStatus ExitOf(int code) {
  for (ExitStatus s : {ExitStatus::kOk, ExitStatus::kFailure, ExitStatus::kUsage,
                       ExitStatus::kInterrupted}) {
    if (static_cast<int>(s) == code) {
      return s;
    }
  }
  return ExitStatus::kFailure;
}

}  // namespace

bool ServedRemotely(std::string_view command) {
  return In(kServed, command);
}

std::optional<ExitStatus> RunOnServer(Invocation& inv, const Command& cmd,
                                      const std::vector<std::string>& argv) {
  std::string url = inv.args.Get("server").value_or("");
  auto named = inv.env.find("TPUFLEET_SERVER");
  if (url.empty() && named != inv.env.end()) {
    url = named->second;  // set empty: here, whatever join made the default
  } else if (url.empty() && !cmd.hidden && !In(kLocal, cmd.name)) {
    Result<std::optional<std::string>> joined = remote::DefaultServerUrl(inv.env);
    if (!joined.ok()) {
      return Fail(inv, joined.status());
    }
    url = joined->value_or("");
  }
  if (url.empty() || cmd.hidden || In(kLocal, cmd.name)) {
    return std::nullopt;
  }
  if (ServedOverSsh(cmd.name)) {
    return RunOverSsh(inv, url);  // here, with the person's own ssh (cli/served_ssh.h)
  }
  if (!ServedRemotely(cmd.name)) {
    return UsageError(inv, "`" + cmd.name + "` is not served remotely yet (the team server " +
                               url + " runs " + kServedList + "); run it without --server "
                               "and TPUFLEET_SERVER, on the server's machine");
  }
  if (inv.app.server_http == nullptr) {
    return Fail(inv, InternalError("this build of tpufleet has no HTTP client for --server"));
  }
  Result<remote::ServerOptions> options =
      remote::ResolveServer(url, inv.args.Get("server-fingerprint").value_or(""), inv.env);
  if (!options.ok()) {
    return options.status().code() == StatusCode::kInvalidArgument
               ? UsageError(inv, options.status().message())
               : Fail(inv, options.status());
  }
  Result<std::map<std::string, std::string>> files = InputFiles(inv, cmd);
  if (!files.ok()) {
    return Fail(inv, files.status());
  }
  remote::ServerClient client(inv.app.server_http, *std::move(options));
  // Ctrl-C closes the connection, which interrupts the command on the server.
  InterruptWatch interrupt;
  Result<remote::RemoteRun> run = client.Run(
      {WithoutServerFlags(argv), *std::move(files)},
      [&inv](api::OutputStream stream, std::string_view text) {
        // What a server sends is shown as text, as anything another machine says.
        (stream == api::OutputStream::kStdout ? inv.out : inv.err)
            << TerminalText(std::string(text)) << std::flush;
      },
      [&interrupt] { return interrupt.Interrupted(); });
  if (interrupt.Interrupted()) {
    inv.err << "tpufleet: interrupted: the connection to the team server is closed, which "
               "stops the command there\n";
    return ExitStatus::kInterrupted;
  }
  if (!run.ok()) {
    return Fail(inv, run.status());
  }
  if (!run->notice.empty()) {
    inv.err << "tpufleet: " << run->notice << "\n";
  }
  return ExitOf(run->exit_code);
}

ExitStatus RunServedCommand(const App& app, const api::CommandRequest& request,
                            std::map<std::string, std::string> env, Access access,
                            std::ostream& out, std::ostream& err,
                            const std::atomic<bool>& interrupt) {
  const std::vector<std::string>& argv = request.argv;
  std::string name;
  for (const std::string& word : argv) {
    if (word == "--") {
      break;
    }
    for (std::string_view flag : kRefusedFlags) {
      if (word == flag || StartsWith(word, std::string(flag) + "=")) {
        err << "tpufleet: " << flag << " is not sent to a team server\n";
        return ExitStatus::kUsage;
      }
    }
    if (name.empty() && !StartsWith(word, "-")) {
      name = word;
    }
  }
  if (!ServedRemotely(name)) {
    err << "tpufleet: `" << name.substr(0, 64) << "` is not served remotely yet; this server runs "
        << kServedList << "\n";
    return ExitStatus::kUsage;
  }
  for (const char* var : {"TPUFLEET_TOKEN", "TPUFLEET_TOKEN_FILE"}) {
    env.erase(var);
  }
  env["TPUFLEET_SERVER"] = "";  // here, even were a server joined on this machine
  return Main(app, argv, out, err, env, Terminal{}, std::move(access), /*served=*/true,
              &interrupt, request.files);
}

}  // namespace tpufleet::cli
