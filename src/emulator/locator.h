// Where the local emulator lives: its state dir and, when it runs, its daemon's pid,
// endpoint and token (from STATE/daemon.json and STATE/token). Shared by the `emulator`
// command and by the fleet commands, which point the gcp-tpu provider at the emulator
// for `provider: emulator`.
//
// Trust: the emulator runs as root (its workers are namespaces) and its workers give
// root to whoever may patch their ssh-keys, so its state dir must be no one else's. A
// state dir, and the secret in it, are trusted only when they belong to the emulator's
// owner (EmulatorOwnerOf), to this process's user or to root, and no group or other
// user may write them (nor read the secret). A directory someone else made is refused,
// never adopted (issue 10, finding 6).
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>

#include "util/status.h"

namespace tpufleet::emulator {

/// The daemon's argv[0]; how a pid is told apart from a recycled one.
inline constexpr const char* kEmulatorDaemonName = "tpufleet-emulator";
/// The file in the state dir holding the emulator's secret, a bearer token made afresh
/// at each start (0600, the owner's). Clients send it as `Authorization: Bearer …`;
/// gcloud reads it through CLOUDSDK_AUTH_ACCESS_TOKEN_FILE.
inline constexpr const char* kEmulatorTokenFile = "token";
/// What every emulator secret starts with, so a stray one is recognisable in a file.
inline constexpr const char* kEmulatorTokenPrefix = "tpufleet-emulator-";

/// --state-dir when given, else $TPUFLEET_EMULATOR_DIR, else
/// ($XDG_STATE_HOME or ~/.local/state)/tpufleet/emulator.
std::string EmulatorStateDir(const std::optional<std::string>& flag,
                             const std::map<std::string, std::string>& env);

/// Whom an emulator's state dir and token belong to: the user who ran sudo ($SUDO_UID,
/// $SUDO_GID) when this process is root, else this process's user. So `sudo tpufleet
/// emulator start` leaves a token its user can read without sudo.
struct EmulatorOwner {
  uid_t uid = 0;
  gid_t gid = 0;
};
EmulatorOwner EmulatorOwnerOf(const std::map<std::string, std::string>& env);

/// OK when `dir` may hold an emulator's state (see the header comment); OK too when it
/// does not exist. PermissionDenied naming the owner and the mode otherwise.
Status CheckEmulatorStateDir(const std::string& dir,
                             const std::map<std::string, std::string>& env);

/// Makes `dir` the emulator's state dir, the owner's, mode 0700: creates it (and the
/// missing directories above it, 0700, the owner's when in the owner's home) or adopts
/// it when it is empty and trusted; a trusted dir that has the marker is kept. Refuses a dir that is not
/// trusted, a symbolic link, or a non-empty directory without the marker.
Status ClaimEmulatorStateDir(const std::string& dir,
                             const std::map<std::string, std::string>& env);

/// True when `dir` holds the marker ClaimEmulatorStateDir writes.
bool IsEmulatorStateDir(const std::string& dir);

struct EmulatorDaemon {
  pid_t pid = 0;
  std::string endpoint;    // "http://127.0.0.1:PORT/"
  std::string token_file;  // STATE/token
};

/// True when `pid` runs `tpufleet-emulator serve` (not a recycled pid).
bool IsEmulatorDaemon(pid_t pid);

/// The daemon recorded in `dir`, if it is alive.
std::optional<EmulatorDaemon> RunningEmulator(const std::string& dir);

/// The secret in `token_file`, after checking the file and its directory as the
/// header says: a regular file (not a link), trusted, readable by its owner only.
Result<std::string> ReadEmulatorToken(const std::string& token_file,
                                      const std::map<std::string, std::string>& env);

}  // namespace tpufleet::emulator
