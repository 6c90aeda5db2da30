// ProviderPool: the cloud providers of one App, kept for its life. A command's world
// asks it for the provider of (name, project); the first ask builds one (with its token
// source, over the App's HTTP client), every later ask gets the same one, so a process
// that opens worlds for weeks holds one provider per name and project, not one (and an
// HTTP client and a token source) per command. When what a provider was built for
// changes (the running emulator's endpoint or token, the credentials the environment
// names), the next ask builds a new one in its place; worlds that hold the old one keep
// it until they close.
//
// Thread-safety: every method may be called from several threads at once.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "provider/gcp_credentials.h"
#include "provider/provider.h"
#include "util/clock.h"
#include "util/http_client.h"
#include "util/status.h"

namespace tpufleet::app {

/// What one pooled provider talks to, and as whom.
struct ProviderTarget {
  std::string provider;  // "gcp-tpu" or "emulator" (ProviderName)
  std::string project;
  std::string endpoint;  // ends in "/"
  /// The running emulator's own token and its file; empty for gcp-tpu, whose
  /// credentials the environment names (FindGcpCredentials).
  std::string emulator_token;
  std::string emulator_token_file;
};

/// A provider and the token source it points at, kept alive together.
struct PooledProvider {
  std::unique_ptr<TokenSource> tokens;
  std::unique_ptr<CloudProvider> provider;
};

/// Builds the provider of `target`; `env` is the asking command's environment.
using ProviderMaker = std::function<Result<PooledProvider>(
    const ProviderTarget& target, const std::map<std::string, std::string>& env)>;

class ProviderPool {
 public:
  /// Real providers (GcpTpuProvider) over `http` and `clock`, which must outlive the pool.
  ProviderPool(HttpClient& http, Clock& clock);
  /// Providers built by `make`: tests count them.
  explicit ProviderPool(ProviderMaker make);

  /// The provider of (`provider`, `project`) where `env` points: the emulator that runs
  /// from its state dir, else the TPU API endpoint. FailedPrecondition when the
  /// provider is the emulator and none runs; the maker's error when it fails.
  Result<std::shared_ptr<CloudProvider>> Get(const std::string& provider,
                                             const std::string& project,
                                             const std::map<std::string, std::string>& env);

  /// How many providers the pool has built in its life.
  size_t built() const;
  /// How many it holds now: one per (name, project) asked for.
  size_t held() const;

 private:
  struct Entry {
    std::string identity;  // endpoint and credentials it was built for
    std::shared_ptr<PooledProvider> pooled;
  };

  const ProviderMaker make_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;  // by name "/" project; guarded by mu_
  size_t built_ = 0;                      // guarded by mu_
};

}  // namespace tpufleet::app
