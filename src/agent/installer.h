// How the agent puts itself on a worker and keeps itself running there: the `install`
// and `supervise` subcommands of tpufleet-agent.
//
// `up` streams the CLI's agent binary to a temporary file on each worker whose agent
// differs and runs `sudo -n TEMP install` (control/agent_install.h). Install copies the
// running binary to /usr/local/bin/tpufleet-agent (a temporary file in that directory,
// then rename(2): a `serve` starting meanwhile runs the old or the new binary, never
// half of one), writes the systemd unit and its multi-user.target.wants link (so the
// agent comes back after a reboot: systemd starts it, and so does the emulator's worker
// init, which starts every unit enabled there), then starts it at this version:
//   - where systemd runs (/run/systemd/system exists): `systemctl daemon-reload`,
//     `enable`, `restart`;
//   - elsewhere (containers, the emulator's workers): stops the running `supervise` and
//     any `serve` not under it, then starts `tpufleet-agent supervise` in a session of its
//     own, detached from the SSH connection that ran install; but when a service manager
//     ran the stopped serve (the emulator's worker init does after a boot, from the
//     unit) and starts the new binary within seconds, that one stays alone.
// The unit's KillMode=process (and supervise's own TERM, to serve alone) stops only the
// server: job keepers run in sessions of their own and outlive an agent restart.
//
// `supervise` runs `serve` and starts it again when it dies, after a backoff that doubles
// up to kSuperviseMaxBackoff (reset once a serve has lived kSuperviseHealthy). A TERM
// (or INT) is passed to serve; supervise exits when serve has. It writes its pid to
// /run/tpufleet-agent/supervise.pid and exits when that file names another process: a
// newer install replaced it.
//
// Thread-safety: both are whole programs, run from main on its only thread.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "util/status.h"

namespace tpufleet::agent {

/// Where the binary, the unit and the supervisor's pid file live, below `root` ("/" on a
/// worker; tests point it at a temporary tree).
struct InstallPaths {
  std::string root = "/";
  std::string Binary() const;       // ROOT + api::kAgentBinaryPath
  std::string Unit() const;         // ROOT/etc/systemd/system/tpufleet-agent.service
  std::string WantsLink() const;    // ROOT/etc/systemd/system/multi-user.target.wants/…
  std::string SystemdRun() const;   // ROOT/run/systemd/system: systemd is PID 1
  std::string SupervisePid() const; // ROOT/run/tpufleet-agent/supervise.pid
};

/// The agent binary is a few MiB; anything far larger is not one.
inline constexpr size_t kMaxAgentBinary = 128 * 1024 * 1024;
/// The first restart of a serve that died waits this long, each next one twice as long.
inline constexpr std::chrono::milliseconds kSuperviseMinBackoff{500};
/// …up to this: a serve that cannot start (a broken host) costs a start per 30 s.
inline constexpr std::chrono::seconds kSuperviseMaxBackoff{30};
/// A serve that ran this long was healthy: the next restart waits kSuperviseMinBackoff.
inline constexpr std::chrono::seconds kSuperviseHealthy{60};
/// supervise looks at its pid file this often, to notice a newer install.
inline constexpr std::chrono::seconds kSupervisePidCheck{5};
/// install waits this long for a stopped supervise (which waits for its serve) to exit
/// before it kills it: serve's own shutdown takes well under a second.
inline constexpr std::chrono::seconds kStopGrace{10};

/// How the installed agent is to serve, beyond its socket: what `install --prometheus
/// PORT` was given (the fleet spec's monitoring.prometheus_port, through `up`), which
/// the unit's ExecStart and supervise pass on to serve.
struct ServeOptions {
  /// `serve --prometheus 0.0.0.0:PORT` (agent/export/metrics_http.h); 0: not served.
  int prometheus_port = 0;
};

/// serve's arguments after the program: "serve", then "--prometheus" "0.0.0.0:PORT"
/// when the options have a port.
std::vector<std::string> ServeArgs(const ServeOptions& options);

/// The systemd unit install writes: ExecStart runs the binary with ServeArgs(options).
std::string AgentUnitText(const ServeOptions& options = {});

/// Puts `self` (the running binary's path) at paths.Binary() (0755), writes the unit and
/// enables it (the wants link). Touches no process: StartAgent does that.
Status InstallFiles(const InstallPaths& paths, const std::string& self,
                    const ServeOptions& options = {});

/// Starts the installed agent at its new version, as the header says (systemctl, or
/// supervise with the same options). REQUIRES: paths.root is "/" and this process is
/// root.
Status StartAgent(const InstallPaths& paths, const ServeOptions& options = {});

/// `tpufleet-agent install [--prometheus PORT]`: InstallFiles from /proc/self/exe, then
/// StartAgent. Prints what it did; 0 when it worked, 1 (with the reason on stderr) when
/// not, 2 on usage (a port that is not a number from 1 to 65535 too).
int InstallMain(const std::vector<std::string>& args);

/// `tpufleet-agent supervise [--prometheus PORT]`: runs `serve` (with ServeArgs) from
/// the installed binary as the header says. Returns the exit status for main (0 after a
/// TERM or a newer install).
int SuperviseMain(const std::vector<std::string>& args);

/// The loop of supervise, over any program (tests run a short-lived one): `argv` is
/// started again each time it exits, until a TERM or INT (passed on to it) or until
/// `pid_file` names another process. REQUIRES: SIGTERM, SIGINT and SIGCHLD are not
/// ignored by this process's caller in a way a child needs (they are blocked here).
int Supervise(const std::vector<std::string>& argv, const std::string& pid_file,
              std::chrono::milliseconds min_backoff = kSuperviseMinBackoff);

}  // namespace tpufleet::agent
