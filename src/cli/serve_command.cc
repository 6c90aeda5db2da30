#include "cli/serve_command.h"

#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include <cerrno>
#include <charconv>
#include <ctime>
#include <map>
#include <mutex>
#include <ostream>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "util/log.h"
#include "util/strings.h"
#include "util/timestamp.h"

namespace tpufleet::cli {
namespace {

// Most fleet specs one serve keeps: each is listed every pass.
constexpr size_t kMaxSpecs = 64;

// The signals serve takes on its main thread; blocked for the command's life so that no
// thread the engine starts is interrupted by them.
class BlockedSignals {
 public:
  BlockedSignals() {
    sigemptyset(&set_);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) {
      sigaddset(&set_, s);
    }
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  ~BlockedSignals() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  BlockedSignals(const BlockedSignals&) = delete;
  BlockedSignals& operator=(const BlockedSignals&) = delete;

  /// The signal that came within `timeout`, or 0.
  int Wait(std::chrono::milliseconds timeout) const {
    timespec ts{static_cast<time_t>(timeout.count() / 1000),
                static_cast<long>(timeout.count() % 1000) * 1000000L};
    int s = ::sigtimedwait(&set_, nullptr, &ts);
    return s < 0 ? 0 : s;
  }

 private:
  sigset_t set_{};
  sigset_t old_{};
};

// serve's log on stderr: "12:00:01 line", or one JSON object a line with --json-log.
class LogLines {
 public:
  LogLines(std::ostream& err, bool json) : err_(err), json_(json) {}

  void Write(std::string_view line) {
    auto now = std::chrono::system_clock::now();
    std::string text = Redact(TerminalText(line, /*keep_newlines=*/false));
    std::lock_guard<std::mutex> l(mu_);
    if (json_) {
      err_ << nlohmann::json{{"time", FormatTimestamp(std::chrono::floor<std::chrono::milliseconds>(now))},
                             {"msg", text}}
                  .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
           << "\n";
    } else {
      std::time_t t = std::chrono::system_clock::to_time_t(now);
      std::tm tm{};
      ::localtime_r(&t, &tm);
      char hms[16];
      std::strftime(hms, sizeof hms, "%H:%M:%S", &tm);
      err_ << hms << " " << text << "\n";
    }
    err_.flush();
  }

 private:
  std::ostream& err_;
  const bool json_;
  std::mutex mu_;
};

// The specs' files as last looked at: their mtimes (0 when unreadable).
using Mtimes = std::map<std::string, timespec>;

Mtimes MtimesOf(const std::vector<std::string>& paths) {
  Mtimes m;
  for (const std::string& p : paths) {
    struct stat st {};
    m[p] = ::stat(p.c_str(), &st) == 0 ? st.st_mtim : timespec{};
  }
  return m;
}

bool Same(const Mtimes& a, const Mtimes& b) {
  for (const auto& [path, t] : a) {
    auto it = b.find(path);
    if (it == b.end() || it->second.tv_sec != t.tv_sec || it->second.tv_nsec != t.tv_nsec) {
      return false;
    }
  }
  return a.size() == b.size();
}

// Every spec of `paths`, loaded and checked, or the first one's error (it names the
// file, line and field). Two specs of one fleet name are refused: serve would keep both.
Result<std::vector<FleetSpec>> LoadSpecs(Invocation& inv, const std::vector<std::string>& paths) {
  std::vector<FleetSpec> fleets;
  std::map<std::string, std::string> seen;  // fleet -> its file
  for (const std::string& path : paths) {
    TPUFLEET_ASSIGN_OR_RETURN(FleetSpec spec, inv.LoadFleetSpec(path));
    if (auto [it, fresh] = seen.emplace(spec.name, path); !fresh) {
      return InvalidArgumentError(path + ": fleet \"" + spec.name + "\" is also " + it->second +
                                  "'s; each fleet may be given once");
    }
    fleets.push_back(std::move(spec));
  }
  return fleets;
}

}  // namespace

Status ParseListen(std::string_view text, std::string* address, int* port) {
  auto bad = [&] {
    return InvalidArgumentError("--listen takes ADDR:PORT (127.0.0.1:8471, [::1]:8471), not \"" +
                                std::string(text.substr(0, 64)) + "\"");
  };
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return bad();
  }
  std::string_view host = text.substr(0, colon);
  std::string_view digits = text.substr(colon + 1);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') {
      return bad();
    }
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return bad();  // an IPv6 address is written in brackets
  }
  int p = -1;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), p);
  if (ec != std::errc() || end != digits.data() + digits.size() || p < 0 || p > 65535) {
    return bad();
  }
  *address = std::string(host);
  *port = p;
  return Status::Ok();
}

bool IsLoopbackAddress(std::string_view address) {
  return address == "localhost" || address == "::1" || StartsWith(address, "127.");
}

ExitStatus RunServe(Invocation& inv) {
  const std::vector<std::string>& paths = inv.args.positional;
  if (paths.empty()) {
    return UsageError(inv, "serve needs at least one FLEET.yaml");
  }
  if (paths.size() > kMaxSpecs) {
    return UsageError(inv, "serve keeps at most " + std::to_string(kMaxSpecs) + " fleet specs");
  }
  ServeSettings settings;
  if (std::optional<std::string> listen = inv.args.Get("listen")) {
    if (Status s = ParseListen(*listen, &settings.listen_address, &settings.listen_port);
        !s.ok()) {
      return UsageError(inv, s.message());
    }
  }
  settings.tls_cert = inv.args.Get("tls-cert").value_or("");
  settings.tls_key = inv.args.Get("tls-key").value_or("");
  settings.plain_http = inv.args.Has("plain-http");
  if (settings.tls_cert.empty() != settings.tls_key.empty()) {
    return UsageError(inv, "--tls-cert and --tls-key go together (the certificate and its key)");
  }
  if (settings.plain_http && !settings.tls_cert.empty()) {
    return UsageError(inv, "--plain-http serves no TLS; leave out --tls-cert and --tls-key");
  }
  if (settings.plain_http && !IsLoopbackAddress(settings.listen_address)) {
    return UsageError(inv, "--plain-http is for a loopback address only (127.0.0.1, [::1]): "
                           "on " + settings.listen_address +
                           " the token would cross the network in the clear");
  }
  std::optional<double> pass =
      NumberFlag(inv, "pass", static_cast<double>(kDefaultServePass.count()), 1, 3600);
  if (!pass) {
    return ExitStatus::kUsage;
  }
  settings.pass = std::chrono::seconds(static_cast<int64_t>(*pass));
  if (inv.args.Has("api-calls-per-minute")) {
    std::optional<double> calls = NumberFlag(inv, "api-calls-per-minute", 0, 1, 100000);
    if (!calls) {
      return ExitStatus::kUsage;
    }
    settings.api_calls_per_minute = static_cast<int>(*calls);
  }
  Result<std::vector<FleetSpec>> fleets = LoadSpecs(inv, paths);
  if (!fleets.ok()) {
    return UsageError(inv, "error: " + fleets.status().message());
  }
  if (!inv.app.serve) {
    return Fail(inv, InternalError("this build of tpufleet has no serve"));
  }
  BlockedSignals signals;
  LogLines log(inv.err, inv.args.Has("json-log"));
  settings.log = [&log](std::string_view line) { log.Write(line); };
  settings.fleets = *fleets;
  Mtimes seen = MtimesOf(paths);
  Result<std::unique_ptr<ServeEngine>> engine = inv.app.serve(inv, settings);
  if (!engine.ok()) {
    return Fail(inv, engine.status());
  }
  if (inv.args.Has("once")) {
    Status s = (*engine)->RunOnce();
    (*engine)->Stop();
    return s.ok() ? ExitStatus::kOk : Fail(inv, s);
  }
  if (Status s = (*engine)->Start(); !s.ok()) {
    (*engine)->Stop();
    return Fail(inv, s);
  }
  for (;;) {
    int sig = signals.Wait(kSpecWatchInterval);
    if (sig == SIGINT || sig == SIGTERM) {
      log.Write(std::string("stopping (") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + ")");
      break;
    }
    Mtimes now = MtimesOf(paths);
    if (sig != SIGHUP && Same(now, seen)) {
      continue;
    }
    // Remembered even when the reload fails: one message per change, not one a second.
    seen = now;
    Result<std::vector<FleetSpec>> reloaded = LoadSpecs(inv, paths);
    if (!reloaded.ok()) {
      log.Write("reload refused: " + reloaded.status().message() +
                "; the last good specs stay in force");
      continue;
    }
    log.Write("reloaded " + std::to_string(reloaded->size()) + " fleet spec(s)");
    (*engine)->SetFleets(*std::move(reloaded));
  }
  (*engine)->Stop();
  return ExitStatus::kOk;
}

Command ServeCommandRow(ExitStatus (*run)(Invocation&)) {
  return {"serve",
          "Keep fleets at their spec: recover preemptions, restart jobs, enforce ttl, idle, budget",
          "FLEET.yaml... [--listen ADDR:PORT] [--tls-cert FILE --tls-key FILE | --plain-http] "
          "[--pass SECONDS] [--api-calls-per-minute N] [--store URL] [--once] [--json-log]",
          "Runs in the foreground until SIGTERM or Ctrl-C, keeping every fleet it is given at\n"
          "its spec (see docs/serve.md): a preempted or vanished node has its husk deleted and\n"
          "is made again, set up, and its `run --restart` jobs started again; a node past its\n"
          "ttl is deleted (logged-in users warned first), an idle one deleted or stopped, and a\n"
          "fleet at its budget creates nothing more. One line per decision on stderr. One\n"
          "serve per state directory (STATE/serve.lock); commands that change the fleet (up,\n"
          "down) wait their turn through STATE/lock. SIGHUP, or an edited spec, reads the specs\n"
          "again; a spec that no longer loads is reported and the last good one stays in force.\n"
          "An HTTP API over TLS (GET /v1/status, /v1/events, /v1/jobs, /metrics, and the\n"
          "commands `tpufleet --server URL` sends) listens on --listen (default\n"
          "127.0.0.1:8471), for the holders of the token in STATE/serve/token (0600). Its\n"
          "certificate is made at first start (STATE/serve/tls.crt, key 0600) unless given;\n"
          "its SHA-256 fingerprint is logged at start, for clients to pin (docs/serve.md).\n"
          "The state is STATE/state.db unless --store (or TPUFLEET_STORE) names another:\n"
          "sqlite:PATH, or postgresql://user@host:port/db for a store on a PostgreSQL server\n"
          "(no password in argv: ~/.pgpass, PGPASSFILE, or the URL in TPUFLEET_STORE).\n"
          "Exit status: 0 when stopped by a signal (or --once passed), 1 on failure, 2 on a bad\n"
          "spec or flag.",
          {{"listen", "ADDR:PORT", "the HTTP API's address (default 127.0.0.1:8471; port 0: any)"},
           {"tls-cert", "FILE", "the API's certificate, PEM (then its chain); with --tls-key"},
           {"tls-key", "FILE", "its private key, PEM, unencrypted, 0600"},
           {"plain-http", "", "no TLS (a loopback --listen only)"},
           {"pass", "SECONDS", "time between reconcile passes (default 5)"},
           {"api-calls-per-minute", "N",
            "the most cloud API calls serve makes a minute, lists and recoveries (default 120)"},
           {"store", "URL", "the state store: sqlite:PATH, a path, or postgresql://…"},
           {"once", "", "run one pass and exit"},
           {"json-log", "", "log lines as JSON objects ({\"time\", \"msg\"})"}},
          false,
          run};
}

}  // namespace tpufleet::cli
