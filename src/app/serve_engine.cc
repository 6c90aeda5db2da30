#include "app/serve_engine.h"

#include <signal.h>
#include <unistd.h>

#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "app/state_lock.h"
#include "app/state_store.h"
#include "cli/remote_command.h"
#include "reconcile/reconciler.h"
#include "server/http_server.h"
#include "server/token.h"
#include "store/postgres_leader.h"
#include "util/event_loop.h"

namespace tpufleet::app {
namespace {

std::string HostName() {
  char name[256] = "";
  if (::gethostname(name, sizeof name - 1) != 0) {
    return "";
  }
  return name;
}

class AppServeEngine final : public cli::ServeEngine {
 public:
  AppServeEngine(std::unique_ptr<cli::WorldHandle> handle, UniqueFd serve_lock,
                 std::unique_ptr<PostgresLeader> leader, const std::string& state_dir,
                 const std::string& postgres_url, const Catalog& catalog, cli::ServeSettings settings, const std::string& token,
                 const std::optional<server::TlsIdentity>& tls,
                 decltype(server::ServeApiContext::run_command) run_command)
      : handle_(std::move(handle)),
        serve_lock_(std::move(serve_lock)),
        leader_(std::move(leader)),
        locker_(state_dir, "serve", postgres_url),
        settings_(std::move(settings)),
        loop_(handle_->world().clock),
        reconciler_(WithLocker(), catalog, loop_, Options(), Log()),
        api_(server::ServeApiContext{token, &reconciler_, &handle_->world().store,
                                     &handle_->world().clock, std::move(run_command)}),
        tls_(tls),
        http_(&api_, settings_.listen_address, settings_.listen_port, tls_ ? &*tls_ : nullptr) {}

  ~AppServeEngine() override { Stop(); }

  Status Listen(const std::string& state_dir) {
    TPUFLEET_TRY(loop_.EnableWake());
    TPUFLEET_ASSIGN_OR_RETURN(int port, http_.Start());
    std::string address = settings_.listen_address.find(':') != std::string::npos
                              ? "[" + settings_.listen_address + "]"
                              : settings_.listen_address;
    std::string url = (tls_ ? "https://" : "http://") + address + ":" + std::to_string(port);
    settings_.log("serving the API on " + url + " (token in " +
                  server::ServeTokenPath(state_dir) + ")");
    if (tls_) {
      // Listening on every address, clients name the machine: suggest its name.
      bool every = settings_.listen_address == "0.0.0.0" || settings_.listen_address == "::";
      std::string client_url =
          every ? "https://" + HostName() + ":" + std::to_string(port) : url;
      settings_.log("TLS certificate " + tls_->fingerprint + " (" + tls_->cert_path +
                    "); clients pin it: tpufleet --server " + client_url +
                    " --server-fingerprint " + tls_->fingerprint + " status");
    }
    reconciler_.SetFleets(settings_.fleets);
    return Status::Ok();
  }

  void SetFleets(std::vector<FleetSpec> fleets) override {
    {
      std::lock_guard<std::mutex> l(mu_);
      pending_ = std::move(fleets);
    }
    loop_.Wake();
  }

  Status RunOnce() override {
    TPUFLEET_ASSIGN_OR_RETURN(bool leading, TryLead());
    if (!leading) {
      return FailedPreconditionError(
          "another serve leads this store and reconciles it; --once runs where none does");
    }
    reconciler_.Pass();
    LogWarnings();
    return loop_.RunUntil([this] { return !reconciler_.busy(); });
  }

  Status Start() override {
    loop_.BeforePoll([this](Clock::MonoTime) {
      std::optional<std::vector<FleetSpec>> fleets;
      {
        std::lock_guard<std::mutex> l(mu_);
        fleets.swap(pending_);
      }
      if (fleets) {
        reconciler_.SetFleets(*std::move(fleets));
      }
    });
    loop_.AtTurnEnd([this](Clock::MonoTime) { LogWarnings(); });
    TPUFLEET_ASSIGN_OR_RETURN(bool leading, TryLead());
    if (leading) {
      Lead();
    } else {
      settings_.log("following: another serve leads this store (" + Leader() +
                    "); serving the API from the store, and taking over if it goes");
    }
    if (leader_) {
      loop_.Every(kLeaderPoll, [this](Clock::MonoTime) { CheckLeadership(); });
    }
    thread_ = std::thread([this] { loop_.Run(); });
    return Status::Ok();
  }

  void Stop() override {
    if (stopped_) {
      return;
    }
    stopped_ = true;
    loop_.Stop();
    if (thread_.joinable()) {
      thread_.join();
    }
    http_.Stop();
    if (!leading_ || leader_lost_) {
      return;  // the serve record is the leader's
    }
    if (Status s = handle_->world().store.ClearServe(::getpid()); !s.ok()) {
      settings_.log("could not clear the serve record: " + s.message());
    }
  }

 private:
  // Whether this serve leads: always on SQLite (STATE/serve.lock makes it the only one),
  // the leader lock's holder on PostgreSQL.
  Result<bool> TryLead() { return leader_ ? leader_->TryLead() : Result<bool>(true); }

  // Starts reconciling: the passes, the serve record.
  void Lead() {
    leading_ = true;
    reconciler_.Start();
  }

  // The serve the store names as keeping it, for the log.
  std::string Leader() {
    Result<std::optional<ServeRecord>> r = handle_->world().store.Serve();
    if (!r.ok() || !r->has_value()) {
      return "not yet recorded";
    }
    return "pid " + std::to_string((*r)->pid) + " on " + (*r)->host;
  }

  // Every kLeaderPoll on the loop: a follower tries to take the lead; a leader that lost
  // it (its session to the store ended: another may lead now) stops this serve, whose
  // actions must not race the new leader's. A supervisor (systemd) starts it again, as a
  // follower.
  void CheckLeadership() {
    if (leading_) {
      if (!leader_->StillLeading()) {
        settings_.log("lost the lead: the connection to the store ended; stopping");
        leader_lost_ = true;
        ::kill(::getpid(), SIGTERM);  // the command's loop stops the engine
      }
      return;
    }
    Result<bool> now = leader_->TryLead();
    if (!now.ok()) {
      settings_.log("cannot reach the store to take the lead: " + now.status().message());
      return;
    }
    if (*now) {
      settings_.log("leading now: the previous leader is gone; resuming from the store");
      Lead();
    }
  }

  // The warnings of the passes (a revoked credential, a stockout everywhere, a CLI
  // command holding the state lock, a budget reached): what the operator must see on
  // serve's log as well as in /v1/status. Each is logged when it first appears and
  // when it ends, not every pass while it holds.
  void LogWarnings() {
    ServeSnapshot snap = reconciler_.Snapshot();
    if (snap.passes == logged_passes_) {
      return;
    }
    logged_passes_ = snap.passes;
    std::set<std::string> now(snap.warnings.begin(), snap.warnings.end());
    for (const std::string& w : snap.warnings) {
      if (!logged_warnings_.count(w)) {
        settings_.log(w);
      }
    }
    for (const std::string& w : logged_warnings_) {
      if (!now.count(w)) {
        settings_.log("no longer: " + w);
      }
    }
    logged_warnings_ = std::move(now);
  }

  World& WithLocker() {
    handle_->world().state_lock = &locker_;
    return handle_->world();
  }

  ReconcilerOptions Options() const {
    ReconcilerOptions o;
    o.pass = settings_.pass;
    if (settings_.api_calls_per_minute) {
      o.api_calls_per_minute = *settings_.api_calls_per_minute;
    }
    o.serve.pid = ::getpid();
    o.serve.host = HostName();
    o.serve.started_at = handle_->world().clock.Now();
    return o;
  }

  ServeLog Log() const {
    std::function<void(std::string_view)> log = settings_.log;
    return [log](const std::string& fleet, const std::string& node, const std::string& message) {
      log(node.empty() ? (fleet.empty() ? message : fleet + ": " + message)
                       : node + ": " + message);
    };
  }

  std::unique_ptr<cli::WorldHandle> handle_;
  UniqueFd serve_lock_;                     // STATE/serve.lock, for the engine's life
  std::unique_ptr<PostgresLeader> leader_;  // the election on PostgreSQL; null on SQLite
  bool leading_ = false;      // set once, on the loop's thread (Start: before it runs)
  bool leader_lost_ = false;  // the loop's thread
  StateDirLocker locker_;
  cli::ServeSettings settings_;
  EventLoop loop_;
  Reconciler reconciler_;
  server::ServeApi api_;
  const std::optional<server::TlsIdentity> tls_;  // none: plain HTTP (loopback)
  server::ServeHttpServer http_;
  std::thread thread_;
  bool stopped_ = false;
  int64_t logged_passes_ = 0;  // the passes whose warnings are logged; the loop's thread
  std::set<std::string> logged_warnings_;  // the last logged pass's; the loop's thread
  std::mutex mu_;
  std::optional<std::vector<FleetSpec>> pending_;  // guarded by mu_
};

}  // namespace

Result<std::unique_ptr<cli::ServeEngine>> MakeServeEngine(FleetWorlds& worlds, cli::Invocation& inv,
                                                          cli::ServeSettings settings) {
  TPUFLEET_ASSIGN_OR_RETURN(std::unique_ptr<cli::WorldHandle> handle,
                            worlds.Open(inv, /*exclusive=*/false));
  std::string dir = FleetStateDir(inv.env);
  TPUFLEET_ASSIGN_OR_RETURN(UniqueFd serve_lock, LockServe(dir));
  TPUFLEET_ASSIGN_OR_RETURN(std::string token, server::LoadOrMakeServeToken(dir));
  // On PostgreSQL several serves (on several machines) may keep one store: one leads.
  TPUFLEET_ASSIGN_OR_RETURN(StoreLocation where, FindStore(inv.args.Get("store"), inv.env, dir));
  std::unique_ptr<PostgresLeader> leader;
  if (where.postgres) {
    TPUFLEET_ASSIGN_OR_RETURN(leader, PostgresLeader::Open(where.target));
  }
  TPUFLEET_ASSIGN_OR_RETURN(const Catalog* catalog, inv.LoadCatalog());
  std::optional<server::TlsIdentity> tls;
  if (!settings.plain_http) {
    TPUFLEET_ASSIGN_OR_RETURN(
        tls, settings.tls_cert.empty()
                 ? server::LoadOrMakeServeIdentity(
                       dir, server::ServeCertificateNames(settings.listen_address, HostName()))
                 : server::LoadTlsIdentity(settings.tls_cert, settings.tls_key));
  }
  // `tpufleet --server URL …`'s commands: this process's own CLI, over this state (the
  // store --store named, too).
  std::map<std::string, std::string> command_env = inv.env;
  if (std::optional<std::string> store = inv.args.Get("store"); store && !store->empty()) {
    command_env["TPUFLEET_STORE"] = *store;
  }
  auto run_command = [app = &inv.app, env = std::move(command_env)](
                         const api::CommandRequest& request, const server::Caller& caller,
                         std::ostream& out, std::ostream& err,
                         const std::atomic<bool>& interrupt) {
    return static_cast<int>(
        cli::RunServedCommand(*app, request, env, caller.access, out, err, interrupt));
  };
  auto engine = std::make_unique<AppServeEngine>(
      std::move(handle), std::move(serve_lock), std::move(leader), dir,
      where.postgres ? where.target : "", *catalog,
      std::move(settings), token, tls, std::move(run_command));
  TPUFLEET_TRY(engine->Listen(dir));
  return std::unique_ptr<cli::ServeEngine>(std::move(engine));
}

}  // namespace tpufleet::app
