// The real world behind the fleet commands: the SQLite state store and SSH files under
// the user's state directory, the gcp-tpu provider (to Google, or to the running
// emulator for `provider: emulator`), the ssh-hosts provider, and OpenSSH.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "cli/fleet_world.h"

namespace tpufleet::app {

/// $TPUFLEET_STATE_DIR, else ($XDG_STATE_HOME or ~/.local/state)/tpufleet.
std::string FleetStateDir(const std::map<std::string, std::string>& env);

/// The cli::WorldFactory of both binaries.
Result<std::unique_ptr<cli::WorldHandle>> OpenFleetWorld(cli::Invocation& inv, bool exclusive);

}  // namespace tpufleet::app
