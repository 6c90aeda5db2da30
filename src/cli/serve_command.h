// `tpufleet serve FLEET.yaml…`: the command's row (flags, help) and its foreground life
// (serve_command.cc): the specs read and checked, signals, reloads, the log lines. What
// keeps the fleets (the reconciler) and the HTTP API are built by main behind the
// ServeEngine seam (App::serve), since the CLI may not include them; tests lend a fake.
//
//   - a spec that does not load or check: one message naming file:line:field, exit 2,
//     nothing started;
//   - SIGTERM or SIGINT: the engine stopped cleanly (its actions in flight finished or
//     left to resume, the serve record cleared), exit 0;
//   - SIGHUP, or a spec file whose mtime changed: the specs read again; a spec that no
//     longer loads (or cannot be read) is one message and the last good specs stay in
//     force;
//   - --once: one pass, then exit (tests, cron).
//
// Thread-safety: RunServe runs on the main thread, which must have started no other
// thread yet: it blocks SIGINT, SIGTERM and SIGHUP before the engine starts its threads,
// so they inherit the mask and only the main thread takes the signals (sigtimedwait).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command.h"
#include "core/fleet_spec.h"
#include "util/status.h"

namespace tpufleet::cli {

/// The default of --pass: often enough that a preemption the agents report is acted on
/// at once (their notices arrive between passes too), rare enough for the API's quotas.
inline constexpr std::chrono::seconds kDefaultServePass{5};
/// How often the specs' mtimes are looked at between signals.
inline constexpr std::chrono::milliseconds kSpecWatchInterval{1000};

/// What `serve` was asked for.
struct ServeSettings {
  std::vector<FleetSpec> fleets;
  std::string listen_address = "127.0.0.1";
  int listen_port = 8471;  // 0: any free port (the log names it)
  std::chrono::seconds pass = kDefaultServePass;
  /// --api-calls-per-minute: the cap on serve's cloud API calls (reconcile/api_pacer.h);
  /// nullopt: its default, 120.
  std::optional<int> api_calls_per_minute;
  /// The API's TLS certificate and key (--tls-cert, --tls-key); both empty: the pair
  /// serve makes for itself in STATE/serve (server/tls_identity.h).
  std::string tls_cert;
  std::string tls_key;
  /// --plain-http: the API without TLS, which only a loopback address may serve.
  bool plain_http = false;
  /// Writes one line of serve's log (a decision, an action, a warning); the command adds
  /// the time and writes it to stderr, as text or JSON (--json-log). Thread-safe.
  std::function<void(std::string_view line)> log;
};

/// What keeps the fleets while `serve` runs: the reconciler and the HTTP API over the
/// state, with STATE/serve.lock held and the serve record kept (app/serve_engine.h).
class ServeEngine {
 public:
  ServeEngine() = default;
  ServeEngine(const ServeEngine&) = delete;
  ServeEngine& operator=(const ServeEngine&) = delete;
  virtual ~ServeEngine() = default;

  /// The fleets to keep from the next pass on (a reload).
  virtual void SetFleets(std::vector<FleetSpec> fleets) = 0;
  /// One pass on the caller's thread (--once).
  virtual Status RunOnce() = 0;
  /// Starts the passes, every `pass`, on threads of its own.
  virtual Status Start() = 0;
  /// Ends cleanly: no new action, the actions in flight ended, the serve record cleared.
  virtual void Stop() = 0;
};

/// Builds the engine: takes STATE/serve.lock (FailedPrecondition naming the serve that
/// holds it), the token, the listening socket. Nothing of the fleets changes yet.
using ServeEngineFactory =
    std::function<Result<std::unique_ptr<ServeEngine>>(Invocation& inv, ServeSettings settings)>;

/// The row, with `run` as its handler: RunServe in tpufleet-serve (whose App carries
/// the factory), ExecBeside in tpufleet, so that the everyday CLI never loads the HTTP
/// server's libraries.
Command ServeCommandRow(ExitStatus (*run)(Invocation&));

/// `--listen ADDR:PORT` ("127.0.0.1:8471", "[::1]:8471"); InvalidArgument otherwise.
Status ParseListen(std::string_view text, std::string* address, int* port);

/// Whether `address` (as --listen gives it) reaches only this machine: 127.0.0.0/8,
/// ::1, localhost.
bool IsLoopbackAddress(std::string_view address);

ExitStatus RunServe(Invocation& inv);

}  // namespace tpufleet::cli
