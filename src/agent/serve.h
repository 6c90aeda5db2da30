// The agent's two ends: `serve`, the daemon on every worker, and `call`, how the CLI
// (over SSH) and people on the worker reach it; and `version`.
//
// serve holds an exclusive flock on `lock` beside its socket for its whole life, so one
// runs per host; it makes the socket's directory (0755) when missing, the socket 0666
// (SO_PEERCRED says who calls), and its state directory 0700. TERM or INT end it; its
// jobs' keepers go on (keeper.h), and the next serve adopts them.
//
// Thread-safety: whole programs, run on main's thread.
#pragma once

#include <string>
#include <vector>

#include "util/status.h"

namespace tpufleet::agent {

/// The build's version, what hello's agent_version says.
std::string AgentVersion();

/// The SHA-256 (hex) of the running executable, as `sha256sum` computes it (the agent
/// links no crypto library: it is static, and OpenSSL's would bring dlopen along).
Result<std::string> BinarySha256();

/// `tpufleet-agent serve [--socket PATH] [--state-dir DIR] [--log-bytes N]
/// [--host-root DIR]`. --host-root points the device guard's sysfs, /dev and libtpu
/// lockfile below DIR (tests); /proc and /etc stay the host's.
int ServeMain(const std::vector<std::string>& args);

/// `tpufleet-agent call [--worker N] [--socket PATH]`: one request line from stdin to the
/// agent ("worker": N added), every answer line to stdout. Exits 0 when an answer
/// arrived, 3 (api::kAgentNotRunningExit) when no agent answers, 2 on bad usage, 1 when
/// the agent closed without an answer.
int CallMain(const std::vector<std::string>& args);

/// `tpufleet-agent version`: "tpufleet-agent VERSION SHA256".
int VersionMain(const std::vector<std::string>& args);

}  // namespace tpufleet::agent
