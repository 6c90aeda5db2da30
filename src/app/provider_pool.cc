#include "app/provider_pool.h"

#include <sys/stat.h>

#include <array>
#include <mutex>
#include <random>
#include <tuple>
#include <utility>

#include "emulator/locator.h"
#include "core/fleet_spec.h"
#include "provider/gcp_tpu.h"

namespace tpufleet::app {
namespace {

// The variables FindGcpCredentials reads (gcp_credentials.h): another value may name
// other credentials, so a provider built under the old ones is not reused.
constexpr std::array<const char*, 6> kCredentialEnv = {
    "GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE", "CLOUDSDK_CONFIG",
    "HOME", "GCE_METADATA_HOST", "GCE_METADATA_IP"};

// The running emulator's own secret (STATE/token), checked as ReadEmulatorToken checks
// it: the emulator takes nothing else from tpufleet, and a user's Google credentials
// must never be sent to a local port. Read again whenever the file is another (a new
// inode, size or mtime: `tpufleet emulator token rotate` renames a new one in), so a
// long-running serve takes up a rotated token as gcloud takes up a rewritten
// CLOUDSDK_AUTH_ACCESS_TOKEN_FILE; otherwise the token read last is used.
class EmulatorToken final : public TokenSource {
 public:
  EmulatorToken(std::string token, std::string file, std::map<std::string, std::string> env)
      : file_(std::move(file)), env_(std::move(env)), token_(std::move(token)) {
    Changed();  // the token handed in is the file's as it is now
  }
  Result<std::string> AccessToken() override {
    std::lock_guard<std::mutex> l(mu_);
    if (Changed()) {
      Result<std::string> fresh = emulator::ReadEmulatorToken(file_, env_);
      if (!fresh.ok()) {
        seen_ = {};  // read it again next time
        // No usable credentials, as when the API refuses them: serve leaves alone what
        // it cannot list (reconcile/reconciler.h).
        return PermissionDeniedError(fresh.status().message());
      }
      token_ = *std::move(fresh);
    }
    return token_;
  }
  std::string Describe() const override { return "the emulator's token (" + file_ + ")"; }
  std::string Renewal() const override {
    return "it is not the running emulator's token; tpufleet reads the file again when it "
           "changes, and `tpufleet emulator token rotate` writes a new one";
  }

 private:
  // Whether the file is not the one last seen (and remembers it); a file that is gone
  // counts as changed, so that reading it says why.
  bool Changed() {
    struct stat st {};
    std::tuple<dev_t, ino_t, off_t, int64_t, int64_t> now{};
    if (::stat(file_.c_str(), &st) == 0) {
      now = {st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec};
    }
    bool changed = now != seen_ || st.st_ino == 0;
    seen_ = now;
    return changed;
  }

  const std::string file_;
  const std::map<std::string, std::string> env_;  // whose token it may be (EmulatorOwnerOf)
  std::mutex mu_;
  std::string token_;  // guarded by mu_
  std::tuple<dev_t, ino_t, off_t, int64_t, int64_t> seen_{};  // guarded by mu_
};

std::string Env(const std::map<std::string, std::string>& env, const std::string& key) {
  auto it = env.find(key);
  return it == env.end() ? "" : it->second;
}

EnvLookup LookupIn(const std::map<std::string, std::string>& env) {
  return [&env](const std::string& name) -> std::optional<std::string> {
    std::string v = Env(env, name);
    return v.empty() ? std::nullopt : std::optional<std::string>(v);
  };
}

// Where (`provider`, `project`) points under `env`, and the emulator's token.
Result<ProviderTarget> TargetOf(const std::string& provider, const std::string& project,
                                const std::map<std::string, std::string>& env) {
  ProviderTarget t{provider, project, "", "", ""};
  if (provider != ProviderName(Provider::kEmulator)) {
    TPUFLEET_ASSIGN_OR_RETURN(t.endpoint, ResolveTpuEndpoint(LookupIn(env)));
    return t;
  }
  std::string dir = emulator::EmulatorStateDir(std::nullopt, env);
  std::optional<emulator::EmulatorDaemon> daemon = emulator::RunningEmulator(dir);
  if (!daemon) {
    return FailedPreconditionError("the fleet's provider is the emulator, and no emulator "
                                   "runs from " + dir + "; start it with `tpufleet "
                                   "emulator start`");
  }
  t.endpoint = daemon->endpoint;
  t.emulator_token_file = daemon->token_file;
  TPUFLEET_ASSIGN_OR_RETURN(t.emulator_token, emulator::ReadEmulatorToken(daemon->token_file, env));
  return t;
}

// What a provider built for `t` under `env` was built for: equal identities, same
// provider.
std::string IdentityOf(const ProviderTarget& t, const std::map<std::string, std::string>& env) {
  std::string id = t.endpoint + "\n" + t.emulator_token;
  if (t.emulator_token.empty()) {
    for (const char* name : kCredentialEnv) {
      id += "\n" + Env(env, name);
    }
  }
  return id;
}

}  // namespace

ProviderPool::ProviderPool(HttpClient& http, Clock& clock)
    : ProviderPool([&http, &clock](const ProviderTarget& t,
                                   const std::map<std::string, std::string>& env)
                       -> Result<PooledProvider> {
        GcpTpuOptions options;
        options.project = t.project;
        options.endpoint = t.endpoint;
        options.seed = std::random_device{}();
        PooledProvider p;
        if (!t.emulator_token.empty()) {
          p.tokens =
              std::make_unique<EmulatorToken>(t.emulator_token, t.emulator_token_file, env);
        } else {
          CredentialOptions co;
          co.env = LookupIn(env);
          TPUFLEET_ASSIGN_OR_RETURN(p.tokens, FindGcpCredentials(co, http, clock));
        }
        p.provider = std::make_unique<GcpTpuProvider>(options, *p.tokens, http, clock);
        return p;
      }) {}

ProviderPool::ProviderPool(ProviderMaker make) : make_(std::move(make)) {}

Result<std::shared_ptr<CloudProvider>> ProviderPool::Get(
    const std::string& provider, const std::string& project,
    const std::map<std::string, std::string>& env) {
  TPUFLEET_ASSIGN_OR_RETURN(ProviderTarget target, TargetOf(provider, project, env));
  std::string identity = IdentityOf(target, env);
  std::lock_guard<std::mutex> l(mu_);
  std::string key = provider + "/" + project;
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.identity != identity) {
    TPUFLEET_ASSIGN_OR_RETURN(PooledProvider made, make_(target, env));
    Entry e{std::move(identity), std::make_shared<PooledProvider>(std::move(made))};
    it = entries_.insert_or_assign(std::move(key), std::move(e)).first;
    ++built_;
  }
  // Shares ownership of the whole entry: its token source lives as long as the provider.
  const std::shared_ptr<PooledProvider>& pooled = it->second.pooled;
  return std::shared_ptr<CloudProvider>(pooled, pooled->provider.get());
}

size_t ProviderPool::built() const {
  std::lock_guard<std::mutex> l(mu_);
  return built_;
}

size_t ProviderPool::held() const {
  std::lock_guard<std::mutex> l(mu_);
  return entries_.size();
}

}  // namespace tpufleet::app
