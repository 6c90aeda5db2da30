// The handlers of `tpufleet emulator …`, run by the tpufleet-emulator binary: they
// start, stop, show and inject faults into the local Cloud TPU. They live in app
// because `serve` builds the real parts (NamespaceHosts, the API server on cpp-httplib)
// and the CLI may not include the emulator.
//
// Process model: `start` runs `tpufleet-emulator serve` as a daemon (its own session,
// output to <state dir>/emulator.log) and waits until it has written
// <state dir>/daemon.json, which names its pid and endpoint; before that it writes a
// fresh secret to <state dir>/token (0600, the owner's: emulator_locator.h), which every
// request must carry. `stop` ends the daemon
// (SIGTERM, then SIGKILL), cleans what a crashed one could leave (NamespaceHosts::
// CleanStale), and removes the state dir. `status` and `inject` talk to the daemon's
// admin endpoints (/emulator/v1/...) with that token.
#include "app/emulator_command.h"
#include "app/emulator_locator.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>
#include <thread>

#include "cli/table.h"
#include "core/catalog.h"
#include "emulator/api_server.h"
#include "emulator/config.h"
#include "emulator/hosts/namespace_hosts.h"
#include "emulator/http_server.h"
#include "util/clock.h"
#include "util/encoding.h"
#include "util/file.h"
#include "util/http_client.h"
#include "util/secret.h"
#include "util/strings.h"

namespace tpufleet::app {
namespace {

using cli::ExitStatus;
using cli::Invocation;
using nlohmann::json;

// How long `start` waits for the daemon to serve: creating the bridge and binding is
// quick; a minute covers a loaded machine.
constexpr std::chrono::seconds kStartTimeout{60};
// How long `stop` lets the daemon destroy its workers before it is killed. 256 workers
// halt in about 2 s; the rest is margin.
constexpr std::chrono::seconds kStopTimeout{60};
constexpr std::chrono::milliseconds kPollInterval{50};
// Admin requests are local and answer at once.
constexpr std::chrono::milliseconds kAdminTimeout{10000};
// argv[0] of the daemon, which `stop` checks before it signals a recorded pid.
constexpr const char* kDaemonName = kEmulatorDaemonName;
// How long `stop` waits for a SIGKILLed daemon to disappear.
constexpr std::chrono::seconds kKillWait{5};
std::string StateDir(Invocation& inv) {
  return EmulatorStateDir(inv.args.Get("state-dir"), inv.env);
}

using Daemon = EmulatorDaemon;

// One call to the daemon's admin routes, with its token (read and checked at each call:
// a command makes a handful).
Result<json> Admin(Invocation& inv, const Daemon& d, const std::string& method,
                   const std::string& path, const std::string& body = "") {
  TPUFLEET_ASSIGN_OR_RETURN(std::string token, ReadEmulatorToken(d.token_file, inv.env));
  CurlHttpClient http;
  HttpRequest req;
  req.method = method;
  req.url = d.endpoint + path;
  req.body = body;
  req.timeout = kAdminTimeout;
  req.headers["Authorization"] = "Bearer " + token;
  if (!body.empty()) {
    req.headers["Content-Type"] = "application/json";
  }
  TPUFLEET_ASSIGN_OR_RETURN(HttpResponse resp, http.Send(req));
  json j = json::parse(resp.body, nullptr, false);
  if (resp.status != 200) {
    std::string message = j.is_object() && j.contains("error") && j["error"].is_object()
                              ? j["error"].value("message", resp.body)
                              : resp.body;
    return InvalidArgumentError(message);
  }
  if (j.is_discarded()) {
    return InternalError("the emulator answered " + path + " with something that is not JSON");
  }
  return j;
}

ExitStatus NotRunning(Invocation& inv, const std::string& dir) {
  if (inv.json) {
    inv.out << json{{"running", false}, {"state_dir", dir}}.dump(2) << "\n";
  } else {
    inv.err << "tpufleet: no emulator is running (state dir " << dir
            << "); start one with: tpufleet emulator start\n";
  }
  return ExitStatus::kFailure;
}

void PrintEndpointHelp(std::ostream& out, const Daemon& d, const std::string& dir) {
  std::string token = ShellQuote(d.token_file);
  out << "Emulator running (pid " << d.pid << "): " << d.endpoint << "\n"
      << "  Cloud TPU API v2  " << d.endpoint << "v2/projects/PROJECT/locations/ZONE/nodes\n"
      << "  token             " << d.token_file
      << " (every call needs it: Authorization: Bearer <its content>)\n"
      << "  gcloud            export CLOUDSDK_API_ENDPOINT_OVERRIDES_TPU=" << d.endpoint
      << " CLOUDSDK_AUTH_ACCESS_TOKEN_FILE=" << token << "\n"
      // printf is the shell's own: the token never stands in a process's argv.
      << "  curl              printf 'header \"Authorization: Bearer %s\"\\n' \"$(cat "
      << token << ")\" | curl -K - " << d.endpoint << "emulator/v1/status\n"
      << "  state and log     " << dir << "\n"
      << "Stop it with: tpufleet emulator stop\n";
}

json DaemonJson(const Daemon& d, const std::string& dir) {
  return json{{"running", true},          {"pid", d.pid},   {"endpoint", d.endpoint},
              {"token_file", d.token_file}, {"state_dir", dir}};
}

ExitStatus Start(Invocation& inv) {
  std::string dir = StateDir(inv);
  if (Status s = CheckEmulatorStateDir(dir, inv.env); !s.ok()) {
    return cli::Fail(inv, s);
  }
  if (std::optional<Daemon> d = RunningEmulator(dir)) {
    if (inv.json) {
      inv.out << DaemonJson(*d, dir).dump(2) << "\n";
    } else {
      inv.out << "Already running.\n";
      PrintEndpointHelp(inv.out, *d, dir);
    }
    return ExitStatus::kOk;
  }
  if (Status s = emulator::NamespaceHosts::CheckSupport(); !s.ok()) {
    return cli::Fail(inv, s);
  }
  if (Status s = ClaimEmulatorStateDir(dir, inv.env); !s.ok()) {
    return cli::Fail(inv, s);
  }
  // A crashed emulator's leftovers go before a new one starts.
  if (Status s = emulator::NamespaceHosts::CleanStale(dir + "/hosts"); !s.ok()) {
    return cli::Fail(inv, s.WithContext("cleaning up after an earlier emulator"));
  }
  std::error_code ec;
  std::filesystem::remove(dir + "/daemon.json", ec);
  std::vector<std::string> argv = {kDaemonName, "serve", "--state-dir", dir,
                                   "--port", inv.args.Get("port").value_or("0")};
  if (auto config = inv.args.Get("config")) {
    argv.push_back("--config");
    argv.push_back(std::filesystem::absolute(*config).string());
  }
  std::string log = dir + "/emulator.log";
  pid_t child = ::fork();
  if (child < 0) {
    return cli::Fail(inv, InternalError("fork failed"));
  }
  if (child == 0) {
    ::setsid();
    int null_fd = ::open("/dev/null", O_RDONLY);
    int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    std::vector<char*> cargv;
    for (std::string& a : argv) {
      cargv.push_back(a.data());
    }
    cargv.push_back(nullptr);
    ::execv("/proc/self/exe", cargv.data());
    ::_exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int wstatus = 0;
    if (::waitpid(child, &wstatus, WNOHANG) == child) {
      Result<std::string> text = ReadFile(log);
      std::string tail = text.ok() ? *text : "";
      if (tail.size() > 2000) {
        tail = tail.substr(tail.size() - 2000);
      }
      return cli::Fail(inv, UnavailableError("the emulator exited while starting; its log (" +
                                             log + ") ends:\n" + tail));
    }
    if (std::optional<Daemon> d = RunningEmulator(dir); d && d->pid == child) {
      if (inv.json) {
        inv.out << DaemonJson(*d, dir).dump(2) << "\n";
      } else {
        PrintEndpointHelp(inv.out, *d, dir);
      }
      return ExitStatus::kOk;
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  ::kill(child, SIGKILL);
  return cli::Fail(inv, TimeoutError("the emulator did not start within " +
                                     FormatDuration(kStartTimeout) + "; see " + log));
}

ExitStatus Stop(Invocation& inv) {
  std::string dir = StateDir(inv);
  // Someone else's directory names no daemon of ours and holds nothing to delete.
  if (Status s = CheckEmulatorStateDir(dir, inv.env); !s.ok()) {
    return cli::Fail(inv, s);
  }
  std::optional<Daemon> d = RunningEmulator(dir);
  if (d) {
    if (!inv.json) {
      inv.out << "Stopping the emulator (pid " << d->pid << ") and its workers...\n";
    }
    ::kill(d->pid, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + kStopTimeout;
    while (IsEmulatorDaemon(d->pid) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(kPollInterval);
    }
    if (IsEmulatorDaemon(d->pid)) {
      inv.err << "tpufleet: the emulator did not stop within " << FormatDuration(kStopTimeout)
              << "; killing it\n";
      ::kill(d->pid, SIGKILL);
      // Its lock on the hosts' state dir goes only when it is gone.
      auto killed_by = std::chrono::steady_clock::now() + kKillWait;
      while (::kill(d->pid, 0) == 0 && std::chrono::steady_clock::now() < killed_by) {
        std::this_thread::sleep_for(kPollInterval);
      }
    }
  }
  if (!IsEmulatorStateDir(dir)) {
    // Never delete a directory the emulator did not make: --state-dir may be a typo.
    if (inv.json) {
      inv.out << json{{"stopped", d.has_value()}, {"state_dir", dir}}.dump(2) << "\n";
    } else {
      inv.out << (d ? "Emulator stopped" : "No emulator was running") << "; " << dir
              << " is not an emulator state dir, so nothing was removed.\n";
    }
    return ExitStatus::kOk;
  }
  if (std::filesystem::exists(dir + "/hosts")) {
    if (Status s = emulator::NamespaceHosts::CleanStale(dir + "/hosts"); !s.ok()) {
      return cli::Fail(inv, s.WithContext("cleaning up the emulator's worker hosts"));
    }
  }
  std::error_code ec;
  bool had_dir = std::filesystem::exists(dir);
  std::filesystem::remove_all(dir, ec);
  if (ec) {
    return cli::Fail(inv, InternalError("removing " + dir + ": " + ec.message()));
  }
  if (inv.json) {
    inv.out << json{{"stopped", d.has_value()}, {"state_dir", dir}}.dump(2) << "\n";
  } else if (d) {
    inv.out << "Emulator stopped; its workers, network and " << dir << " are gone.\n";
  } else {
    inv.out << "No emulator was running" << (had_dir ? "; cleaned up " + dir : "") << ".\n";
  }
  return ExitStatus::kOk;
}

ExitStatus ShowStatus(Invocation& inv) {
  std::string dir = StateDir(inv);
  std::optional<Daemon> d = RunningEmulator(dir);
  if (!d) {
    return NotRunning(inv, dir);
  }
  Result<json> status = Admin(inv, *d, "GET", "emulator/v1/status");
  if (!status.ok()) {
    return cli::Fail(inv, status.status());
  }
  json& s = *status;
  if (inv.json) {
    s.update(DaemonJson(*d, dir));
    inv.out << s.dump(2) << "\n";
    return ExitStatus::kOk;
  }
  inv.out << "Emulator running (pid " << d->pid << "): " << d->endpoint << "\n\n";
  if (s["nodes"].empty()) {
    inv.out << "No nodes.\n";
  } else {
    cli::TextTable table({"NODE", "TYPE", "STATE", "WORKERS"});
    for (const json& n : s["nodes"]) {
      std::vector<std::string> addresses;
      for (const json& w : n["workers"]) {
        addresses.push_back(w.value("address", "?") + (w.value("cutOff", false) ? " (cut off)" : ""));
      }
      std::string state = n.value("state", "?");
      if (n.contains("health") && n["health"] != "HEALTHY") {
        state += " " + n["health"].get<std::string>();
      }
      table.AddRow({n.value("name", "?"), n.value("acceleratorType", "?"), state,
                    addresses.empty() ? "-" : Join(addresses, " ")});
    }
    table.Print(inv.out);
  }
  if (!s["queuedResources"].empty()) {
    inv.out << "\nQueued resources:\n";
    for (const json& q : s["queuedResources"]) {
      inv.out << "  " << q.value("name", "?") << "  " << q.value("state", "?") << "\n";
    }
  }
  inv.out << "\nFaults: ";
  if (s["faults"].empty()) {
    inv.out << "none\n";
  } else {
    inv.out << "\n";
    for (const json& f : s["faults"]) {
      inv.out << "  " << f.dump() << "\n";
    }
  }
  return ExitStatus::kOk;
}

// The full resource name of the node the user named: a full name, or a node id that
// is unique among the emulator's nodes.
Result<std::string> ResolveNode(Invocation& inv, const Daemon& d, const std::string& node) {
  if (StartsWith(node, "projects/")) {
    return node;
  }
  TPUFLEET_ASSIGN_OR_RETURN(json status, Admin(inv, d, "GET", "emulator/v1/status"));
  std::vector<std::string> matches;
  std::vector<std::string> ids;
  for (const json& n : status["nodes"]) {
    std::string name = n.value("name", "");
    std::string id = name.substr(name.rfind('/') + 1);
    ids.push_back(id);
    if (id == node) {
      matches.push_back(name);
    }
  }
  if (matches.size() == 1) {
    return matches[0];
  }
  if (matches.empty()) {
    return NotFoundError("the emulator has no node \"" + node + "\"" + DidYouMean(node, ids));
  }
  return InvalidArgumentError("several nodes are named \"" + node + "\"; give the full name: " +
                              Join(matches, ", "));
}

ExitStatus Inject(Invocation& inv) {
  const std::vector<std::string>& pos = inv.args.positional;
  static const std::vector<std::string> kKinds = {"stockout", "quota", "storm", "preempt",
                                                  "maintenance", "cutoff", "slow", "clear"};
  if (pos.size() < 2) {
    return cli::UsageError(inv, "inject needs a KIND: " + Join(kKinds, ", "));
  }
  const std::string& kind = pos[1];
  if (std::find(kKinds.begin(), kKinds.end(), kind) == kKinds.end()) {
    return cli::UsageError(inv, "unknown fault kind '" + kind + "'" + DidYouMean(kind, kKinds) +
                                    "; kinds: " + Join(kKinds, ", "));
  }
  std::string dir = StateDir(inv);
  std::optional<Daemon> d = RunningEmulator(dir);
  if (!d) {
    return NotRunning(inv, dir);
  }
  if (kind == "clear") {
    std::string path = pos.size() > 2 ? "emulator/v1/faults/" + UrlEscape(pos[2]) : "emulator/v1/faults";
    Result<json> r = Admin(inv, *d, "DELETE", path);
    if (!r.ok()) {
      return cli::Fail(inv, r.status());
    }
    inv.out << (inv.json ? r->dump(2) : std::string("Cleared.")) << "\n";
    return ExitStatus::kOk;
  }
  json fault = {{"kind", kind}};
  // Flags map one to one onto the admin API's fields (emulator/faults.h ParseFault).
  static const std::vector<std::pair<std::string, std::string>> kStringFields = {
      {"zone", "zone"}, {"region", "region"}, {"family", "family"},
      {"for", "duration"}, {"notice", "notice"}};
  for (const auto& [flag, field] : kStringFields) {
    if (auto v = inv.args.Get(flag)) {
      fault[field] = *v;
    }
  }
  for (const char* flag : {"rate", "factor"}) {
    if (auto v = inv.args.Get(flag)) {
      double number = 0;
      if (!ParseDouble(*v, &number)) {
        return cli::UsageError(inv, std::string("--") + flag + " expects a number, got '" + *v + "'");
      }
      fault[flag] = number;
    }
  }
  // The admin API wants whole numbers for these (a worker index, a generator seed).
  for (const char* flag : {"seed", "worker"}) {
    if (auto v = inv.args.Get(flag)) {
      long long number = 0;
      if (!ParseInt(*v, &number)) {
        return cli::UsageError(inv, std::string("--") + flag + " expects a whole number, got '" +
                                        *v + "'");
      }
      fault[flag] = number;
    }
  }
  if (auto codes = inv.args.Get("codes")) {
    json list = json::array();
    for (const std::string& c : Split(*codes, ',')) {
      long long code = 0;
      if (!ParseInt(Trim(c), &code)) {
        return cli::UsageError(inv, "--codes expects HTTP codes like 429,503, got '" + *codes + "'");
      }
      list.push_back(code);
    }
    fault["httpCodes"] = list;
  }
  if (kind == "preempt" || kind == "maintenance" || kind == "cutoff") {
    if (pos.size() != 3) {
      return cli::UsageError(inv, "inject " + kind + " needs the NODE it applies to");
    }
    Result<std::string> node = ResolveNode(inv, *d, pos[2]);
    if (!node.ok()) {
      return cli::Fail(inv, node.status());
    }
    fault["node"] = *node;
  } else if (pos.size() > 2) {
    return cli::UsageError(inv, "inject " + kind + " takes flags, not '" + pos[2] + "'");
  }
  Result<json> r = Admin(inv, *d, "POST", "emulator/v1/faults", fault.dump());
  if (!r.ok()) {
    return cli::Fail(inv, r.status());
  }
  if (inv.json) {
    inv.out << r->dump(2) << "\n";
  } else {
    inv.out << "Injected " << r->value("id", "?") << ": " << r->dump() << "\n"
            << "End it with: tpufleet emulator inject clear " << r->value("id", "") << "\n";
  }
  return ExitStatus::kOk;
}

// The daemon itself: serves until SIGTERM or SIGINT, then destroys every worker.
ExitStatus Serve(Invocation& inv) {
  // Block the stop signals before any thread starts, so every thread inherits the mask
  // and sigwait below is the only place they arrive.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::string dir = StateDir(inv);
  if (Status s = ClaimEmulatorStateDir(dir, inv.env); !s.ok()) {
    return cli::Fail(inv, s);
  }
  Result<const Catalog*> catalog = inv.LoadCatalog();
  if (!catalog.ok()) {
    return cli::Fail(inv, catalog.status());
  }
  emulator::EmulatorConfig config;
  if (auto path = inv.args.Get("config")) {
    Result<emulator::EmulatorConfig> loaded = emulator::LoadEmulatorConfig(*path, **catalog);
    if (!loaded.ok()) {
      return cli::Fail(inv, loaded.status());
    }
    config = std::move(*loaded);
  }
  long long port = 0;
  if (!ParseInt(inv.args.Get("port").value_or("0"), &port) || port < 0 || port > 65535) {
    return cli::UsageError(inv, "--port expects a port number (0 picks a free one)");
  }
  // A fresh secret at each start (an old token file dies with its emulator), readable
  // by the owner alone, before anything listens.
  std::string token_file = dir + "/" + kEmulatorTokenFile;
  Result<std::string> secret = NewSecretToken(kEmulatorTokenPrefix);
  if (!secret.ok()) {
    return cli::Fail(inv, secret.status());
  }
  if (Status s = WriteFileAtomic(token_file, *secret + "\n", 0600); !s.ok()) {
    return cli::Fail(inv, s);
  }
  // What the owner's own tpufleet reads without sudo: the token, daemon.json, the log.
  EmulatorOwner owner = EmulatorOwnerOf(inv.env);
  auto give_to_owner = [&](const std::string& path) {
    return ::geteuid() != 0 || ::lchown(path.c_str(), owner.uid, owner.gid) == 0
               ? Status::Ok()
               : ErrnoStatus("chown " + path, errno);
  };
  for (const std::string& path : {token_file, dir + "/emulator.log"}) {
    if (Status s = give_to_owner(path); !s.ok() && s.code() != StatusCode::kNotFound) {
      return cli::Fail(inv, s);
    }
  }
  config.auth.owner_token = *std::move(secret);
  RealClock clock;
  Result<std::unique_ptr<emulator::NamespaceHosts>> hosts = emulator::NamespaceHosts::Create(
      {dir + "/hosts", emulator::NamespaceHosts::DefaultWorkerBinary()}, clock);
  if (!hosts.ok()) {
    return cli::Fail(inv, hosts.status());
  }
  emulator::ApiServer api(config, clock, hosts->get(), **catalog);
  emulator::HttpServerOptions options;
  options.port = static_cast<int>(port);
  emulator::HttpServer http(&api, options);
  Result<int> bound = http.Start();
  if (!bound.ok()) {
    return cli::Fail(inv, bound.status());
  }
  std::string endpoint = "http://127.0.0.1:" + std::to_string(*bound) + "/";
  json daemon = {{"pid", ::getpid()}, {"port", *bound}, {"endpoint", endpoint}};
  if (Status s = WriteFileAtomic(dir + "/daemon.json", daemon.dump() + "\n", 0600); !s.ok()) {
    return cli::Fail(inv, s);
  }
  if (Status s = give_to_owner(dir + "/daemon.json"); !s.ok()) {
    return cli::Fail(inv, s);
  }
  inv.out << "tpufleet emulator serving " << endpoint << std::endl;
  int sig = 0;
  sigwait(&stop_signals, &sig);
  inv.out << "tpufleet emulator: signal " << sig << ", destroying every worker" << std::endl;
  std::error_code ec;
  std::filesystem::remove(dir + "/daemon.json", ec);
  std::filesystem::remove(token_file, ec);
  http.Stop();
  hosts->reset();
  return ExitStatus::kOk;
}

}  // namespace

ExitStatus RunEmulatorHere(Invocation& inv) {
  static const std::vector<std::pair<std::string, ExitStatus (*)(Invocation&)>> kActions = {
      {"start", Start}, {"stop", Stop}, {"status", ShowStatus}, {"inject", Inject},
      {"serve", Serve}};
  std::vector<std::string> names;
  for (const auto& [name, run] : kActions) {
    if (!inv.args.positional.empty() && inv.args.positional[0] == name) {
      return run(inv);
    }
    names.push_back(name);
  }
  if (inv.args.positional.empty()) {
    return cli::UsageError(inv, "emulator needs an action: start, stop, status or inject "
                                "(see tpufleet emulator --help)");
  }
  return cli::UsageError(inv, "unknown emulator action '" + inv.args.positional[0] + "'" +
                                  DidYouMean(inv.args.positional[0], names));
}


}  // namespace tpufleet::app
