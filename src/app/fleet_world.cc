#include "app/fleet_world.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "app/holder_command.h"
#include "app/state_lock.h"
#include "app/state_store.h"
#include "control/agent_install.h"
#include "control/port_forward.h"
#include "core/fleet_spec.h"
#include "provider/ssh_hosts.h"
#include "ssh/fanout_engine.h"
#include "ssh/fleet_key.h"
#include "ssh/holder.h"
#include "ssh/runner.h"
#include "ssh/ssh_files.h"
#include "ssh/ssh_include_mode.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/http_client.h"
#include "util/strings.h"
#include "util/unique_fd.h"

namespace tpufleet::app {
namespace {

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

// The known_hosts of the user tpufleet acts for: under sudo the invoking user's (the
// same user DefaultLogin picks), else "" for ~/.ssh/known_hosts.
std::string UserKnownHosts(const std::map<std::string, std::string>& env) {
  std::string user = Env(env, "SUDO_USER");
  if (::geteuid() != 0 || DefaultLogin("", user, true) != user) {
    return "";
  }
  passwd pw;
  passwd* found = nullptr;
  char buf[4096];
  if (::getpwnam_r(user.c_str(), &pw, buf, sizeof buf, &found) != 0 || found == nullptr) {
    return "";
  }
  return std::string(found->pw_dir) + "/.ssh/known_hosts";
}

// What an ssh-hosts provider is built from (names, login, port, addresses): equal keys,
// equal providers.
std::string SshHostsKey(const std::vector<NodeSpec>& nodes) {
  std::string key;
  for (const NodeSpec& n : nodes) {
    key += n.name + "\n" + n.ssh_user + "\n" + std::to_string(n.port) + "\n" +
           Join(n.hosts, "\n") + "\n\n";
  }
  return key;
}

// A command's providers: the pool's (shared for the App's life, held here while the
// world lives) and the ssh-hosts ones, which hold only addresses from the spec or the
// record and go with the world. Both are built once per key, so a world that lives
// long (a reconciler's) does not grow either.
class AppProviders final : public ProviderSource {
 public:
  AppProviders(const std::map<std::string, std::string>& env, ProviderPool& pool)
      : env_(env), known_hosts_(UserKnownHosts(env_)), pool_(pool) {}

  Result<CloudProvider*> ForFleet(const FleetSpec& fleet) override {
    if (fleet.provider == Provider::kSshHosts) {
      return SshHosts(fleet.nodes);
    }
    return Pooled(std::string(ProviderName(fleet.provider)), fleet.project);
  }

  Result<CloudProvider*> ForRecord(const NodeRecord& r) override {
    if (r.provider == ProviderName(Provider::kSshHosts)) {
      return SshHosts({SpecOfRecord(r)});
    }
    return Pooled(r.provider, r.project);
  }

 private:
  CloudProvider* SshHosts(std::vector<NodeSpec> nodes) {
    std::string key = SshHostsKey(nodes);
    std::lock_guard<std::mutex> l(mu_);
    std::unique_ptr<CloudProvider>& p = ssh_hosts_[key];
    if (!p) {
      p = std::make_unique<SshHostsProvider>(std::move(nodes), known_hosts_);
    }
    return p.get();
  }

  // Asks the pool once per (name, project) in a world: a command sees one provider
  // for its whole run, even when the emulator restarts meanwhile.
  Result<CloudProvider*> Pooled(const std::string& provider, const std::string& project) {
    std::string key = provider + "/" + project;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (auto it = held_.find(key); it != held_.end()) {
        return it->second.get();
      }
    }
    TPUFLEET_ASSIGN_OR_RETURN(std::shared_ptr<CloudProvider> p,
                              pool_.Get(provider, project, env_));
    std::lock_guard<std::mutex> l(mu_);
    return held_.try_emplace(key, std::move(p)).first->second.get();
  }

  const std::map<std::string, std::string> env_;
  const std::string known_hosts_;  // the invoking user's; "": ~/.ssh/known_hosts
  ProviderPool& pool_;
  std::mutex mu_;
  // By name "/" project; guarded by mu_.
  std::map<std::string, std::shared_ptr<CloudProvider>> held_;
  // By SshHostsKey; guarded by mu_.
  std::map<std::string, std::unique_ptr<CloudProvider>> ssh_hosts_;
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

// Where tpufleet keeps its files, and the ~/.ssh/config that includes its SSH config.
struct FleetPaths {
  ControlPaths control;
  std::string user_ssh_config;  // ~/.ssh/config, which gets one Include line; "": left alone
  /// Whether user_ssh_config may belong to another user (TPUFLEET_SSH_INCLUDE=force).
  SshConfigOwner user_ssh_config_owner = SshConfigOwner::kMine;
};

class AppWorld final : public cli::WorldHandle {
 public:
  AppWorld(const std::map<std::string, std::string>& env, std::unique_ptr<Store> store,
           StateHold lock, const std::string& state_dir, const FleetPaths& paths,
           Clock& clock, ProviderPool& pool)
      : clock_(clock),
        store_(std::move(store)),
        lock_(std::move(lock)),
        providers_(env, pool),
        ssh_(state_dir + "/ssh/config"),
        fanout_(MakeFanout(env, clock_)),
        local_fanout_(clock_),
        keys_(paths.control.ssh_dir),
        ssh_files_(paths.control.ssh_dir, paths.user_ssh_config, paths.user_ssh_config_owner),
        world_{*store_,
               clock_,
               providers_,
               ssh_,
               *fanout_,
               local_fanout_,
               keys_,
               ssh_files_,
               forwarder_,
               paths.control,
               DefaultLogin(Env(env, "USER"), Env(env, "SUDO_USER"), ::geteuid() == 0)} {}

  World& world() override { return world_; }

 private:
  Clock& clock_;  // the App's
  std::unique_ptr<Store> store_;
  StateHold lock_;  // held while the world lives, for commands that change the fleet
  AppProviders providers_;
  OpenSshRunner ssh_;
  std::unique_ptr<Fanout> fanout_;
  LocalFanout local_fanout_;
  FleetKeyFiles keys_;
  SshFileDir ssh_files_;
  SshForwarder forwarder_;
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
Result<FleetPaths> PathsFor(const std::map<std::string, std::string>& env,
                            const std::string& state_dir) {
  FleetPaths paths;
  paths.control.ssh_dir = state_dir + "/ssh";
  paths.control.state_dir = state_dir;
  paths.user_ssh_config = Env(env, "HOME") + "/.ssh/config";
  // The ssh config's Host blocks run tpufleet to find a worker's current address.
  TPUFLEET_ASSIGN_OR_RETURN(paths.control.proxy_program, BesideThisProgram(kCliProgram));
  // The node agent up installs: built and installed beside tpufleet.
  paths.control.agent_binary = Env(env, std::string(kAgentBinaryEnv));
  if (paths.control.agent_binary.empty()) {
    const std::string& self = paths.control.proxy_program;
    paths.control.agent_binary = self.substr(0, self.rfind('/') + 1) + "tpufleet-agent";
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::optional<SshConfigOwner> owner,
                            ParseSshIncludeMode(Env(env, std::string(kSshIncludeEnv))));
  if (!owner) {
    paths.user_ssh_config.clear();
  } else {
    paths.user_ssh_config_owner = *owner;
  }
  return paths;
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

FleetWorlds::FleetWorlds() : pool_(http_, clock_) {}

FleetWorlds::FleetWorlds(ProviderMaker make) : pool_(std::move(make)) {}

cli::WorldFactory FleetWorlds::Factory() {
  return [this](cli::Invocation& inv, bool exclusive) { return Open(inv, exclusive); };
}

Result<std::unique_ptr<cli::WorldHandle>> FleetWorlds::Open(cli::Invocation& inv,
                                                            bool exclusive) {
  std::string dir = FleetStateDir(inv.env);
  TPUFLEET_TRY(MakeStateDir(dir));
  TPUFLEET_ASSIGN_OR_RETURN(FleetPaths paths, PathsFor(inv.env, dir));
  // The state store: STATE/state.db unless --store or TPUFLEET_STORE names another.
  TPUFLEET_ASSIGN_OR_RETURN(StoreLocation where, FindStore(inv.args.Get("store"), inv.env, dir));
  StateHold lock;
  if (exclusive) {
    TPUFLEET_ASSIGN_OR_RETURN(lock, LockState(dir, inv.command, where.postgres ? where.target : ""));
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenStore(where));
  return std::unique_ptr<cli::WorldHandle>(
      std::make_unique<AppWorld>(inv.env, std::move(store), std::move(lock), dir, paths,
                                 clock_, pool_));
}

}  // namespace tpufleet::app
