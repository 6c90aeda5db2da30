// The real world behind the fleet commands: the state store (STATE/state.db, or the one
// --store or TPUFLEET_STORE names: app/state_store.h) and SSH files under the user's
// state directory, the gcp-tpu provider (to Google, or to the running
// emulator for `provider: emulator`), the ssh-hosts provider, and OpenSSH.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "app/provider_pool.h"
#include "cli/fleet_world.h"
#include "util/clock.h"
#include "util/http_client.h"

namespace tpufleet::app {

/// $TPUFLEET_STATE_DIR, else ($XDG_STATE_HOME or ~/.local/state)/tpufleet.
std::string FleetStateDir(const std::map<std::string, std::string>& env);

/// The world factory of tpufleet's App: opens each command's world (its state store,
/// SSH files and fan-out) over what it keeps for its own life, the App's: one clock,
/// one HTTP client, and one ProviderPool. Make one in main, before the App.
class FleetWorlds {
 public:
  FleetWorlds();
  /// Providers built by `make` instead of real ones (tests count them).
  explicit FleetWorlds(ProviderMaker make);
  FleetWorlds(const FleetWorlds&) = delete;
  FleetWorlds& operator=(const FleetWorlds&) = delete;

  /// The world of one command; `exclusive` takes the state dir's lock (cli/fleet_world.h).
  Result<std::unique_ptr<cli::WorldHandle>> Open(cli::Invocation& inv, bool exclusive);
  /// A cli::WorldFactory that calls Open; this must outlive it.
  cli::WorldFactory Factory();

  const ProviderPool& providers() const { return pool_; }

 private:
  RealClock clock_;
  CurlHttpClient http_;
  ProviderPool pool_;
};

}  // namespace tpufleet::app
