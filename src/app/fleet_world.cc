#include "app/fleet_world.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <random>

#include "emulator/locator.h"
#include "app/holder_command.h"
#include "core/fleet_spec.h"
#include "provider/gcp_credentials.h"
#include "provider/gcp_tpu.h"
#include "provider/ssh_hosts.h"
#include "ssh/fanout_engine.h"
#include "ssh/holder.h"
#include "ssh/runner.h"
#include "store/sqlite_store.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/http_client.h"
#include "util/unique_fd.h"

namespace tpufleet::app {
namespace {

// The running emulator's own secret (STATE/token), read once and checked: the emulator
// takes nothing else from tpufleet, and a user's Google credentials must never be sent
// to a local port.
class EmulatorToken final : public TokenSource {
 public:
  EmulatorToken(std::string token, std::string file)
      : token_(std::move(token)), file_(std::move(file)) {}
  Result<std::string> AccessToken() override { return token_; }
  std::string Describe() const override { return "the emulator's token (" + file_ + ")"; }

 private:
  const std::string token_;
  const std::string file_;
};

std::string Env(const std::map<std::string, std::string>& env, const std::string& key) {
  auto it = env.find(key);
  return it == env.end() ? "" : it->second;
}

// A node of the ssh-hosts provider, as its record remembers it.
NodeSpec SpecOfRecord(const NodeRecord& r) {
  NodeSpec n;
  n.name = r.name;
  n.names = {r.name};
  n.ssh_user = r.login;
  n.port = r.port;
  for (const WorkerRecord& w : r.workers) {
    n.hosts.push_back(w.address);
  }
  n.workers = static_cast<int>(n.hosts.size());
  return n;
}

class AppProviders final : public ProviderSource {
 public:
  AppProviders(std::map<std::string, std::string> env, HttpClient& http, Clock& clock)
      : env_(std::move(env)), http_(http), clock_(clock) {}

  Result<CloudProvider*> ForFleet(const FleetSpec& fleet) override {
    if (fleet.provider == Provider::kSshHosts) {
      std::lock_guard<std::mutex> l(mu_);
      auto p = std::make_unique<SshHostsProvider>(fleet.nodes);
      CloudProvider* raw = p.get();
      owned_.push_back(std::move(p));
      return raw;
    }
    return Gcp(std::string(ProviderName(fleet.provider)), fleet.project);
  }

  Result<CloudProvider*> ForRecord(const NodeRecord& r) override {
    if (r.provider == ProviderName(Provider::kSshHosts)) {
      std::lock_guard<std::mutex> l(mu_);
      auto p = std::make_unique<SshHostsProvider>(std::vector<NodeSpec>{SpecOfRecord(r)});
      CloudProvider* raw = p.get();
      owned_.push_back(std::move(p));
      return raw;
    }
    return Gcp(r.provider, r.project);
  }

 private:
  Result<CloudProvider*> Gcp(const std::string& provider, const std::string& project) {
    std::lock_guard<std::mutex> l(mu_);
    std::string key = provider + "/" + project;
    if (auto it = gcp_.find(key); it != gcp_.end()) {
      return it->second.get();
    }
    EnvLookup env = [this](const std::string& name) -> std::optional<std::string> {
      std::string v = Env(env_, name);
      return v.empty() ? std::nullopt : std::optional<std::string>(v);
    };
    GcpTpuOptions options;
    options.project = project;
    options.seed = std::random_device{}();
    std::unique_ptr<TokenSource> tokens;
    if (provider == ProviderName(Provider::kEmulator)) {
      std::string dir = emulator::EmulatorStateDir(std::nullopt, env_);
      std::optional<emulator::EmulatorDaemon> daemon = emulator::RunningEmulator(dir);
      if (!daemon) {
        return FailedPreconditionError("the fleet's provider is the emulator, and no emulator "
                                       "runs from " + dir + "; start it with `tpufleet "
                                       "emulator start`");
      }
      options.endpoint = daemon->endpoint;
      TPUFLEET_ASSIGN_OR_RETURN(std::string token, emulator::ReadEmulatorToken(daemon->token_file, env_));
      tokens = std::make_unique<EmulatorToken>(std::move(token), daemon->token_file);
    } else {
      TPUFLEET_ASSIGN_OR_RETURN(options.endpoint, ResolveTpuEndpoint(env));
    }
    if (!tokens) {
      CredentialOptions co;
      co.env = env;
      TPUFLEET_ASSIGN_OR_RETURN(tokens, FindGcpCredentials(co, http_, clock_));
    }
    auto p = std::make_unique<GcpTpuProvider>(options, *tokens, http_, clock_);
    CloudProvider* raw = p.get();
    token_sources_.push_back(std::move(tokens));
    gcp_[key] = std::move(p);
    return raw;
  }

  const std::map<std::string, std::string> env_;
  HttpClient& http_;
  Clock& clock_;
  std::mutex mu_;
  std::vector<std::unique_ptr<TokenSource>> token_sources_;
  std::map<std::string, std::unique_ptr<CloudProvider>> gcp_;
  std::vector<std::unique_ptr<CloudProvider>> owned_;
};

// exec's fan-out: through the connection holder (warm), or with TPUFLEET_HOLDER=off
// in this process (cold).
std::unique_ptr<Fanout> MakeFanout(const std::map<std::string, std::string>& env,
                                   Clock& clock) {
  if (Env(env, "TPUFLEET_HOLDER") == "off") {
    return std::make_unique<LocalFanout>(clock);
  }
  std::string socket = HolderSocketPath(env);
  return std::make_unique<HolderFanout>(
      socket, [socket] { return StartHolderProcess(socket); }, clock);
}

class AppWorld final : public cli::WorldHandle {
 public:
  AppWorld(const std::map<std::string, std::string>& env, std::unique_ptr<SqliteStore> store,
           UniqueFd lock, const std::string& state_dir, const ControlPaths& paths)
      : store_(std::move(store)),
        lock_(std::move(lock)),
        providers_(env, http_, clock_),
        ssh_(state_dir + "/ssh/config"),
        fanout_(MakeFanout(env, clock_)),
        world_{*store_,
               clock_,
               providers_,
               ssh_,
               *fanout_,
               paths,
               DefaultLogin(Env(env, "USER"))} {}

  World& world() override { return world_; }

 private:
  RealClock clock_;
  CurlHttpClient http_;
  std::unique_ptr<SqliteStore> store_;
  UniqueFd lock_;  // held while the world lives, for commands that change the fleet
  AppProviders providers_;
  OpenSshRunner ssh_;
  std::unique_ptr<Fanout> fanout_;
  World world_;
};

// The state dir holds the fleet key, the store and the holder's socket: a directory
// someone else made (or may write) could hand them over, so it must be ours alone.
Status MakeStateDir(const std::string& dir) {
  Status s = MakePrivateDirs(dir);
  if (s.ok()) {
    return s;
  }
  std::string hint = s.code() == StatusCode::kFailedPrecondition
                         ? "; tpufleet keeps its key and state only in a directory of its own "
                           "user that no one else may write: remove it, or set "
                           "TPUFLEET_STATE_DIR to one of yours"
                         : "";
  return Status(s.code(), "state directory: " + s.message() + hint);
}

// Where ~/.ssh/config gets its Include line, as TPUFLEET_SSH_INCLUDE says.
Result<ControlPaths> PathsFor(const std::map<std::string, std::string>& env,
                              const std::string& state_dir) {
  ControlPaths paths{state_dir + "/ssh", Env(env, "HOME") + "/.ssh/config"};
  std::string mode = Env(env, std::string(kSshIncludeEnv));
  if (mode == "off") {
    paths.user_ssh_config.clear();
  } else if (mode == "force") {
    paths.user_ssh_config_owner = SshConfigOwner::kAnyone;
  } else if (!mode.empty() && mode != "auto") {
    return InvalidArgumentError(std::string(kSshIncludeEnv) + " must be auto, force or off, not " +
                                QuoteForMessage(mode));
  }
  return paths;
}

// Takes the state dir's lock, so only one command changes the fleet at a time. The
// kernel drops it when the process dies, kill -9 included.
Result<UniqueFd> LockStateDir(const std::string& dir) {
  std::string path = dir + "/lock";
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.get() < 0) {
    return PermissionDeniedError("cannot open " + path + ": " + std::strerror(errno));
  }
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    return FailedPreconditionError("another tpufleet command is changing the fleet (it holds " +
                                   path + "); wait for it to finish");
  }
  return fd;
}

}  // namespace

std::string FleetStateDir(const std::map<std::string, std::string>& env) {
  if (!Env(env, "TPUFLEET_STATE_DIR").empty()) {
    return Env(env, "TPUFLEET_STATE_DIR");
  }
  std::string base = !Env(env, "XDG_STATE_HOME").empty() ? Env(env, "XDG_STATE_HOME")
                                                          : Env(env, "HOME") + "/.local/state";
  return base + "/tpufleet";
}

Result<std::unique_ptr<cli::WorldHandle>> OpenFleetWorld(cli::Invocation& inv, bool exclusive) {
  std::string dir = FleetStateDir(inv.env);
  TPUFLEET_TRY(MakeStateDir(dir));
  TPUFLEET_ASSIGN_OR_RETURN(ControlPaths paths, PathsFor(inv.env, dir));
  UniqueFd lock;
  if (exclusive) {
    TPUFLEET_ASSIGN_OR_RETURN(lock, LockStateDir(dir));
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> store,
                            SqliteStore::Open(dir + "/state.db"));
  return std::unique_ptr<cli::WorldHandle>(
      std::make_unique<AppWorld>(inv.env, std::move(store), std::move(lock), dir, paths));
}

}  // namespace tpufleet::app
