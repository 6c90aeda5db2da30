#include "app/provider_pool.h"

#include <array>
#include <random>
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
          p.tokens = std::make_unique<EmulatorToken>(t.emulator_token, t.emulator_token_file);
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
