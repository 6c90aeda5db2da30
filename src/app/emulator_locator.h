// Where the local emulator lives: its state dir and, when it runs, its daemon's pid and
// endpoint (from STATE/daemon.json). Shared by the `emulator` command and by the fleet
// commands, which point the gcp-tpu provider at the emulator for `provider: emulator`.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>

namespace tpufleet::app {

/// The daemon's argv[0]; how a pid is told apart from a recycled one.
inline constexpr const char* kEmulatorDaemonName = "tpufleet-emulator";

/// --state-dir when given, else $TPUFLEET_EMULATOR_DIR, else
/// ($XDG_STATE_HOME or ~/.local/state)/tpufleet/emulator.
std::string EmulatorStateDir(const std::optional<std::string>& flag,
                             const std::map<std::string, std::string>& env);

struct EmulatorDaemon {
  pid_t pid = 0;
  std::string endpoint;  // "http://127.0.0.1:PORT/"
};

/// True when `pid` runs `tpufleet-emulator serve` (not a recycled pid).
bool IsEmulatorDaemon(pid_t pid);

/// The daemon recorded in `dir`, if it is alive.
std::optional<EmulatorDaemon> RunningEmulator(const std::string& dir);

}  // namespace tpufleet::app
