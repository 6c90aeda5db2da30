// The node agent as `up` puts it on workers, and as `doctor` compares it: what runs on
// each worker (the commands of up's agent steps) and how their output is read. The
// steps themselves (which workers, batching, the store) are up_agent.cc's.
//
// The version compared is the binary's SHA-256 (plan of issue 12): the CLI hashes its
// own agent binary once (LoadLocalAgent); a worker's agent is current when the file at
// /usr/local/bin/tpufleet-agent has that hash and the agent answers `hello` with it (a
// serve still running an older binary is not current), and its unit serves Prometheus'
// metrics on the spec's monitoring.prometheus_port (or not at all when the spec has
// none). Up's agent steps:
//   1. check: every worker runs AgentCheckScript (bash -s) at once: the installed file's
//      hash, the unit's --prometheus port, whether the login may sudo without a
//      password, and hello's answer;
//   2. install: the binary is streamed on stdin to the workers that are not current,
//      into a temporary file whose hash is checked before `sudo -n FILE install
//      [--prometheus PORT]` runs it as root (agent/installer.h);
//   3. accounts: `sudo -n tpufleet-agent call` with an accounts.apply line making the
//      spec's users (UsersOn) on every worker;
//   4. mounts, for a node whose data disks have a `mount`: the same with a disks.mount
//      line.
//
// Thread-safety: pure functions but LoadLocalAgent, which reads a file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/agent.h"
#include "core/fleet_spec.h"
#include "util/status.h"

namespace tpufleet {

/// The environment variable naming the agent binary to install instead of the one next
/// to tpufleet (a build of its own, a cross-built one).
inline constexpr std::string_view kAgentBinaryEnv = "TPUFLEET_AGENT_BINARY";
/// WorkerRecord::agent_sha256 of an ssh-hosts worker whose login has no passwordless
/// sudo: no agent can be put there (up warns once, and does not look again).
inline constexpr char kAgentNotInstallable[] = "-";
/// The agent binary is a few MiB; a file far larger is not one (and is not read whole).
inline constexpr size_t kMaxLocalAgent = 128 * 1024 * 1024;
/// The unit `tpufleet-agent install` writes on a worker (agent/installer.h), whose
/// ExecStart says whether serve exposes Prometheus' metrics.
inline constexpr std::string_view kAgentUnitPath = "/etc/systemd/system/tpufleet-agent.service";

/// The CLI's agent binary: what up installs and doctor compares with.
struct LocalAgent {
  std::string path;
  std::string sha256;  // lowercase hex
};

/// Reads and hashes `path`. FailedPrecondition saying where the binary is looked for
/// when it is missing or unreadable.
Result<LocalAgent> LoadLocalAgent(const std::string& path);

/// What the store records of a worker's current agent (WorkerRecord::agent_sha256): the
/// binary's SHA-256, followed by " prometheus=PORT" when it serves the metrics there.
/// A spec whose port changed no longer matches the record, so the next `up` checks the
/// worker again (and installs with the new port) instead of trusting the record.
std::string AgentRecord(const std::string& sha256, int prometheus_port);

/// What one worker said to AgentCheckScript.
struct AgentCheck {
  std::string installed_sha256;  // the file's hash; "" when there is none
  int prometheus_port = 0;       // the unit's serve --prometheus port; 0: none
  bool sudo = false;             // the login may run `sudo -n`
  bool answers = false;          // hello was answered
  std::string running_sha256;    // hello's binary_sha256
  std::string why_not;           // when it did not answer: what `call` said
  /// Installed at `sha256` with the unit serving metrics on `want_prometheus_port` (0:
  /// not), and that binary answers.
  bool Current(const std::string& sha256, int want_prometheus_port) const {
    return installed_sha256 == sha256 && answers && running_sha256 == sha256 &&
           prometheus_port == want_prometheus_port;
  }
};

/// Phase one's script, for bash on stdin (one short command on every worker).
std::string AgentCheckScript();
/// The output of AgentCheckScript. InvalidArgument when it is not that script's (a
/// login shell that prints a banner is fine: unknown lines are skipped).
Result<AgentCheck> ParseAgentCheck(std::string_view output);

/// Phase two's command for the login shell: reads the binary from stdin into a
/// temporary file, checks its SHA-256 against `sha256`, runs `sudo -n FILE install`
/// (with `--prometheus PORT` when prometheus_port is not 0), removes the file. Exits
/// non-zero (saying why) when any of it fails.
std::string AgentInstallCommand(const std::string& sha256, int prometheus_port);

/// Phase three's command: the agent's `call` as root, reading its request on stdin.
std::string AgentRootCallCommand();
/// The accounts.apply request making `users` (the node's whole list).
api::AgentRequest AccountsRequest(const std::vector<UserSpec>& users);
/// Its line (with its newline).
std::string AccountsRequestLine(const std::vector<UserSpec>& users);
/// "NAME: why" for a result that failed (an error, or refused); "" for one that went
/// through.
std::string AccountFailure(const api::AccountResult& r);
/// What failed in one worker's accounts.apply answer, "; "-joined, "" when it applied
/// everything: each result AccountFailure names, the metadata guard's error, and each of
/// `remove` the answer does not take away (an agent too old to know removals).
std::string AccountsReportFailures(const api::AccountsReport& report,
                                   const std::vector<api::AccountRemoval>& remove);
/// OK when the answer (the agent's output) says every account was made and every one of
/// `remove` taken away; else FailedPrecondition with AccountsReportFailures (or what the
/// agent answered instead).
Status ParseAccountsAnswer(std::string_view output,
                           const std::vector<api::AccountRemoval>& remove = {});

/// The node's data disks that have a mount path, in the spec's order.
std::vector<DataDiskSpec> MountsOf(const NodeSpec& node);
/// The disks.mount request line (with its newline) mounting `disks`.
std::string MountsRequestLine(const std::vector<DataDiskSpec>& disks);
/// OK when every disk was mounted (or already was); else FailedPrecondition naming each
/// disk that failed and why (or what the agent answered instead).
Status ParseMountsAnswer(std::string_view output);

}  // namespace tpufleet
