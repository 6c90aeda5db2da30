// The OpenSSH command lines of `tpufleet ssh` and `tpufleet forward`.
//
// Both run the system `ssh` with tpufleet's own config, `-F STATE/ssh/config` (written by
// up, import and down from the state store), so a worker is reached by its alias with
// the fleet key and its pinned host key, as `ssh ALIAS` from the user's shell would.
// -F is always given: OpenSSH finds ~/.ssh/config (and the Include line tpufleet adds
// there) through the passwd entry's home, not $HOME, so that file may not be the one
// the user thinks.
//
// Command lines are argv vectors for execvp or posix_spawn, never shell strings. The
// alias is checked (CheckSshAlias) and follows "--", so no node name can become an
// option; a remote command's words are shell-quoted once each, for the remote shell
// that ssh hands them to, so they arrive exactly as typed.
//
// Thread-safety: pure functions. (The config they name: World::ssh_files.Config().)
#pragma once

#include <string>
#include <vector>

#include "control/targets.h"
#include "control/world.h"
#include "util/status.h"

namespace tpufleet {

/// The highest TCP port number (ports are 16 bits; 0 is not one a forward can use).
inline constexpr int kMaxTcpPort = 65535;

/// `ssh -F CONFIG [-t] -- ALIAS [COMMAND]`: a login shell on `target` or, with `command`,
/// its words run there exactly as given. `tty` asks for a terminal (-t), for a command
/// run at one (a login shell gets one anyway). InvalidArgument when the alias is not one
/// ssh_config can hold.
Result<std::vector<std::string>> SshLoginArgv(const std::string& config, const WorkerTarget& target,
                                              const std::vector<std::string>& command, bool tty);

/// `ssh -F CONFIG -N -o ExitOnForwardFailure=yes -o ConnectTimeout=S
///  -o ServerAliveInterval=5 -o ServerAliveCountMax=3
///  -L 127.0.0.1:LOCAL:localhost:REMOTE -- ALIAS`: forwards LOCAL on this machine's
/// loopback (only this machine can use it) to REMOTE on the worker's own loopback, and
/// exits at once if the forward cannot be set up, or within 15 s of its connection
/// dying (port_forward.h's kForwardAliveInterval). Ports must be 1-kMaxTcpPort (Internal
/// otherwise: callers check them); InvalidArgument as SshLoginArgv.
Result<std::vector<std::string>> ForwardArgv(const std::string& config, const WorkerTarget& target,
                                             int local_port, int remote_port);

}  // namespace tpufleet
