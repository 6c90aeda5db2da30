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

#include <chrono>
#include <string>
#include <vector>

#include "util/status.h"

namespace tpufleet::agent {

/// The build's version, what hello's agent_version says.
std::string AgentVersion();

/// The SHA-256 (hex) of the running executable, as `sha256sum` computes it (the agent
/// links no crypto library: it is static, and OpenSSL's would bring dlopen along).
Result<std::string> BinarySha256();

/// The shortest --sample-interval: a sample reads every process's stat, so a faster one
/// would cost the worker a share of a core.
inline constexpr std::chrono::milliseconds kMinSampleInterval{50};

/// `tpufleet-agent serve [--socket PATH] [--state-dir DIR] [--log-bytes N]
/// [--host-root DIR] [--sample-interval MS] [--nvml LIBRARY] [--prometheus
/// [ADDR:]PORT] [--metadata IPV4:PORT]`. --host-root points the device guard's sysfs, /dev and libtpu lockfile
/// below DIR (tests); /proc and /etc stay the host's. Serve samples its worker every
/// --sample-interval (default 1000 ms; agent/sampler/sampler.h) for the metrics op;
/// --nvml names the NVML library to load (tests), instead of the driver's
/// libnvidia-ml.so.1; --prometheus serves the latest sample on GET /metrics there
/// (agent/export/metrics_http.h; off unless given); --metadata is the metadata server
/// whose notices it watches (notice_watcher.h; default kDefaultMetadataAddress).
int ServeMain(const std::vector<std::string>& args);

/// `tpufleet-agent sample [--json]`: two samples a second apart, printed as the metrics
/// op's report (JSON), or as a few lines for a person; for bench/top.sh and for people on
/// a worker. It does not ask serve, so it knows no jobs: no job samples, no job ids on
/// the chips' holders, and only port 8431's runtime metrics (the metrics op has them).
int SampleMain(const std::vector<std::string>& args);

/// `tpufleet-agent call [--worker N] [--socket PATH]`: one request line from stdin to the
/// agent ("worker": N added), every answer line to stdout. Exits 0 when an answer
/// arrived, 3 (api::kAgentNotRunningExit) when no agent answers, 2 on bad usage, 1 when
/// the agent closed without an answer.
int CallMain(const std::vector<std::string>& args);

/// `tpufleet-agent version`: "tpufleet-agent VERSION SHA256".
int VersionMain(const std::vector<std::string>& args);

}  // namespace tpufleet::agent
