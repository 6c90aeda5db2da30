#include "app/serve_engine.h"

#include <unistd.h>

#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "app/state_lock.h"
#include "reconcile/reconciler.h"
#include "server/http_server.h"
#include "server/token.h"
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
                 const std::string& state_dir, const Catalog& catalog,
                 cli::ServeSettings settings, const std::string& token)
      : handle_(std::move(handle)),
        serve_lock_(std::move(serve_lock)),
        locker_(state_dir, "serve"),
        settings_(std::move(settings)),
        loop_(handle_->world().clock),
        reconciler_(WithLocker(), catalog, loop_, Options(), Log()),
        api_(server::ServeApiContext{token, &reconciler_, &handle_->world().store,
                                     &handle_->world().clock}),
        http_(&api_, settings_.listen_address, settings_.listen_port) {}

  ~AppServeEngine() override { Stop(); }

  Status Listen(const std::string& state_dir) {
    TPUFLEET_TRY(loop_.EnableWake());
    TPUFLEET_ASSIGN_OR_RETURN(int port, http_.Start());
    std::string address = settings_.listen_address.find(':') != std::string::npos
                              ? "[" + settings_.listen_address + "]"
                              : settings_.listen_address;
    settings_.log("serving the API on http://" + address + ":" + std::to_string(port) +
                  " (token in " + server::ServeTokenPath(state_dir) + ")");
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
    reconciler_.Start();
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
    if (Status s = handle_->world().store.ClearServe(::getpid()); !s.ok()) {
      settings_.log("could not clear the serve record: " + s.message());
    }
  }

 private:
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
  UniqueFd serve_lock_;  // STATE/serve.lock, for the engine's life
  StateDirLocker locker_;
  cli::ServeSettings settings_;
  EventLoop loop_;
  Reconciler reconciler_;
  server::ServeApi api_;
  server::ServeHttpServer http_;
  std::thread thread_;
  bool stopped_ = false;
  int64_t logged_passes_ = 0;  // the passes whose warnings are logged; the loop's thread
  std::set<std::string> logged_warnings_;  // the last logged pass's; the loop's thread
  std::mutex mu_;
  std::optional<std::vector<FleetSpec>> pending_;  // guarded by mu_
};

}  // namespace

Result<std::unique_ptr<cli::ServeEngine>> MakeServeEngine(FleetWorlds& worlds,
                                                          cli::Invocation& inv,
                                                          cli::ServeSettings settings) {
  TPUFLEET_ASSIGN_OR_RETURN(std::unique_ptr<cli::WorldHandle> handle,
                            worlds.Open(inv, /*exclusive=*/false));
  std::string dir = FleetStateDir(inv.env);
  TPUFLEET_ASSIGN_OR_RETURN(UniqueFd serve_lock, LockServe(dir));
  TPUFLEET_ASSIGN_OR_RETURN(std::string token, server::LoadOrMakeServeToken(dir));
  TPUFLEET_ASSIGN_OR_RETURN(const Catalog* catalog, inv.LoadCatalog());
  auto engine = std::make_unique<AppServeEngine>(std::move(handle), std::move(serve_lock), dir,
                                                 *catalog, std::move(settings), token);
  TPUFLEET_TRY(engine->Listen(dir));
  return std::unique_ptr<cli::ServeEngine>(std::move(engine));
}

}  // namespace tpufleet::app
