// TestWorld: a World for control's tests, all in memory: a FakeCloud, a FakeFanout (with
// FakeWorkers answering up's login checks, agent steps and setup scripts), a
// FakeSshRunner, a
// FakeClock, a real SqliteStore in memory, and the fleet key, SSH files and forwards of
// fake_seams.h. Nothing runs ssh-keygen or ssh, and nothing is written under HOME or
// the state dir (whose paths the World still names); `dir` is a temp dir for the test's
// own files (specs, copy sources), removed afterwards; it holds the CLI's agent binary
// (a few bytes) that up installs.
//
// The catalog is the built-in one with a second v4 zone (us-central2-a): the built-in
// lists v4 in one zone only, and zone failover needs two.
//
// Thread-safety: the fakes lock; the TestWorld itself belongs to the test's thread.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "api/agent.h"
#include "control/agent_install.h"
#include "control/progress.h"
#include "control/testing/fake_seams.h"
#include "control/up.h"
#include "control/world.h"
#include "core/catalog.h"
#include "core/fleet_spec.h"
#include "provider/testing/fake_cloud.h"
#include "ssh/testing/fake_fanout.h"
#include "ssh/testing/fake_ssh_runner.h"
#include "ssh/testing/temp_dir.h"
#include "store/sqlite_store.h"
#include "util/encoding.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/testing/fake_clock.h"
#include "util/testing/status_printer.h"

namespace tpufleet::testing {

inline constexpr char kZoneB[] = "us-central2-b";
inline constexpr char kZoneA[] = "us-central2-a";
inline constexpr char kProject[] = "lab-project";

// Users' public keys (real ed25519 keys, public halves only).
inline constexpr char kAliceKey[] =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIF8CMJzNhdkO7jeYCceTkgcAMVdmkDM5OkhGSfnuAsrl "
    "alice@laptop";
inline constexpr char kBobKey[] =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEJRPDF2Ls8M/iUvYINLgiHOimRyl2Qw5/Ne86WVqpLx bob@laptop";

inline bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// Hands out the one FakeCloud for every fleet and record.
class FakeProviders final : public ProviderSource {
 public:
  explicit FakeProviders(CloudProvider& cloud) : cloud_(cloud) {}
  Result<CloudProvider*> ForFleet(const FleetSpec&) override { return &cloud_; }
  Result<CloudProvider*> ForRecord(const NodeRecord&) override { return &cloud_; }

 private:
  CloudProvider& cloud_;
};

/// Keeps every progress report.
class ProgressLog final : public ProgressObserver {
 public:
  void OnProgress(const NodeProgress& p) override {
    std::lock_guard<std::mutex> l(mu_);
    all_.push_back(p);
  }
  std::vector<NodeProgress> all() const {
    std::lock_guard<std::mutex> l(mu_);
    return all_;
  }
  bool Saw(const std::string& node, NodePhase phase) const {
    std::lock_guard<std::mutex> l(mu_);
    for (const NodeProgress& p : all_) {
      if (p.node == node && p.phase == phase) {
        return true;
      }
    }
    return false;
  }

 private:
  mutable std::mutex mu_;
  std::vector<NodeProgress> all_;  // guarded by mu_
};

/// The workers' side of up's login checks, agent steps and setup scripts, answering
/// through the FakeFanout: it records every (worker alias, script) run, answers exit 0
/// with no output, and can refuse the first N logins to each worker (as sshd does while
/// a VM boots) or make every setup script exit non-zero on one worker (a failing setup).
/// Each worker has an agent as the agent steps leave it: none at first, the uploaded
/// binary's hash after an install (which a test can make fail), answering unless
/// stopped; its login may sudo unless a test says not.
class FakeWorkers {
 public:
  struct Call {
    std::string alias;   // "trainer-w2"
    std::string script;  // what the worker's bash (or the agent's call) read on stdin
    std::string command{};  // the login shell's command
  };

  explicit FakeWorkers(FakeFanout& fanout) : fanout_(fanout) {
    fanout_.respond = [this](const FanoutHost& host, size_t index, FanoutSink& sink) {
      return Answer(host, index, sink);
    };
  }

  /// The first `n` logins to each worker are refused.
  void RefuseFirst(int n) { refuse_first_ = n; }
  /// When set, asked first of every connection: a message ("No route to host") when the
  /// host cannot be reached at the address it was asked at (one the cloud moved away).
  std::function<std::string(const FanoutHost&)> unreachable;
  /// Scripts other than the "true" check exit `exit_code` on `alias`, printing `output`.
  void FailScriptsOn(const std::string& alias, int exit_code, std::string output) {
    failing_[alias] = {exit_code, std::move(output)};
  }

  /// The agent on `alias` is the binary hashing to `sha256` ("": none), answering.
  void SetAgent(const std::string& alias, const std::string& sha256) {
    agents_[alias] = sha256;
    stopped_.erase(alias);
  }
  /// The agent's hash on `alias` ("" when none is installed).
  std::string Agent(const std::string& alias) const {
    auto it = agents_.find(alias);
    return it == agents_.end() ? "" : it->second;
  }
  /// The port of `serve --prometheus` in the unit of the agent on `alias`, as the last
  /// install set it ("none" when it had no --prometheus, or there was no install).
  std::string Prometheus(const std::string& alias) const {
    auto it = prometheus_.find(alias);
    return it == prometheus_.end() ? "none" : it->second;
  }
  /// The agent on `alias` is installed but does not answer (until installed again).
  void StopAgent(const std::string& alias) { stopped_.insert(alias); }
  /// The login on `alias` may not sudo.
  void NoSudoOn(const std::string& alias) { no_sudo_.insert(alias); }
  /// Installing the agent on `alias` exits `exit_code`, printing `output`.
  void FailInstallOn(const std::string& alias, int exit_code, std::string output) {
    failing_install_[alias] = {exit_code, std::move(output)};
  }
  /// disks.mount on `alias` refuses every disk with `error`.
  void FailMountOn(const std::string& alias, std::string error) {
    failing_mount_[alias] = std::move(error);
  }
  /// How many installs ran (on any worker), and which workers had accounts.apply.
  int installs() const { return installs_; }
  std::vector<std::string> AccountsOn() const { return RootCallsOn(api::AgentOp::kAccountsApply); }
  /// Each accounts.apply request, with the worker it went to, in order.
  std::vector<std::pair<std::string, api::AgentRequest>> AccountRequests() const {
    std::vector<std::pair<std::string, api::AgentRequest>> out;
    for (const Call& c : calls_) {
      if (Result<api::AgentRequest> r = RootCall(c); r.ok() && r->op == api::AgentOp::kAccountsApply) {
        out.emplace_back(c.alias, *r);
      }
    }
    return out;
  }
  /// The workers that had disks.mount, and each request's mounts as "disk:path:ro|rw".
  std::vector<std::string> MountsOn() const { return RootCallsOn(api::AgentOp::kDisksMount); }
  std::vector<std::string> MountRequests() const {
    std::vector<std::string> out;
    for (const Call& c : calls_) {
      if (Result<api::AgentRequest> r = RootCall(c); r.ok() && r->op == api::AgentOp::kDisksMount) {
        std::string line;
        for (const api::MountSpec& m : r->mounts) {
          line += (line.empty() ? "" : " ") + m.disk + ":" + m.path + (m.read_only ? ":ro" : ":rw");
        }
        out.push_back(line);
      }
    }
    return out;
  }

  const std::vector<Call>& calls() const { return calls_; }
  /// How many runs of exactly `script` there were (on any worker).
  int RunsOf(std::string_view script) const {
    int n = 0;
    for (const Call& c : calls_) {
      n += c.script == script ? 1 : 0;
    }
    return n;
  }
  /// How many runs had a script containing `part` (setup arrives wrapped).
  int RunsWith(std::string_view part) const {
    int n = 0;
    for (const Call& c : calls_) {
      n += c.script.find(part) != std::string::npos ? 1 : 0;
    }
    return n;
  }

 private:
  HostResult Answer(const FanoutHost& host, size_t index, FanoutSink& sink) {
    const FanoutJob& job = fanout_.jobs[fanout_.answering];
    const std::string command = host.command.empty() ? job.command : host.command;
    calls_.push_back({host.name, job.stdin_header, command});
    HostResult r;
    if (std::string why = unreachable ? unreachable(host) : ""; !why.empty()) {
      r.outcome = HostOutcome::kUnreachable;
      r.message = std::move(why);
      return r;
    }
    if (refusals_[host.name]++ < refuse_first_) {
      r.outcome = HostOutcome::kUnreachable;
      r.message = "connect to " + host.address + " port 22: Connection refused";
      return r;
    }
    if (job.stdin_header == AgentCheckScript()) {
      sink.OnOutput(index, OutputStream::kStdout, CheckOutput(host.name));
      return r;
    }
    if (!job.stdin_path.empty()) {  // the agent's install: the binary on stdin
      ++installs_;
      if (auto it = failing_install_.find(host.name); it != failing_install_.end()) {
        sink.OnOutput(index, OutputStream::kStderr, it->second.second);
        r.exit_code = it->second.first;
        return r;
      }
      SetAgent(host.name, HexEncode(Sha256(ReadFile(job.stdin_path).value())));
      size_t flag = job.command.find(" install --prometheus ");
      prometheus_[host.name] = flag == std::string::npos
                                   ? "none"
                                   : job.command.substr(flag + std::strlen(" install --prometheus "));
      return r;
    }
    if (IsRootCall(command)) {  // accounts.apply, disks.mount
      api::AgentRequest request = api::ParseAgentRequest(Trim(job.stdin_header)).value();
      if (request.op == api::AgentOp::kDisksMount) {
        std::vector<api::MountResult> mounted;
        auto failing = failing_mount_.find(host.name);
        for (const api::MountSpec& m : request.mounts) {
          mounted.push_back(failing == failing_mount_.end()
                                ? api::MountResult{m.disk, m.path, "mounted", ""}
                                : api::MountResult{m.disk, m.path, "refused", failing->second});
        }
        sink.OnOutput(index, OutputStream::kStdout,
                      api::AnswerLine({Status::Ok(), mounted}) + "\n");
        return r;
      }
      api::AccountsReport made;
      for (const api::AccountSpec& u : request.users) {
        made.results.push_back({u.name, "created", "", ""});
      }
      for (const api::AccountRemoval& x : request.remove) {
        made.results.push_back({x.name, x.purge ? "purged" : "revoked", "", ""});
      }
      sink.OnOutput(index, OutputStream::kStdout,
                    api::AnswerLine({Status::Ok(), made}) + "\n");
      return r;
    }
    if (auto it = failing_.find(host.name); it != failing_.end() && job.stdin_header != "true") {
      sink.OnOutput(index, OutputStream::kStdout, it->second.second);
      r.exit_code = it->second.first;
    }
    return r;
  }

  // up's `sudo -n … call`, or CallAgents' `sudo -n … call --worker N`.
  static bool IsRootCall(const std::string& command) {
    return command == AgentRootCallCommand() || command.rfind(AgentRootCallCommand() + " ", 0) == 0;
  }
  static Result<api::AgentRequest> RootCall(const Call& c) {
    if (!IsRootCall(c.command)) {
      return NotFoundError("not a root call");
    }
    return api::ParseAgentRequest(Trim(c.script));
  }
  std::vector<std::string> RootCallsOn(api::AgentOp op) const {
    std::vector<std::string> out;
    for (const Call& c : calls_) {
      if (Result<api::AgentRequest> r = RootCall(c); r.ok() && r->op == op) {
        out.push_back(c.alias);
      }
    }
    return out;
  }

  // What AgentCheckScript prints on `alias`.
  std::string CheckOutput(const std::string& alias) const {
    std::string sha = Agent(alias);
    std::string out = "tpufleet-check installed " + (sha.empty() ? "none" : sha) + "\n" +
                      "tpufleet-check prometheus " + Prometheus(alias) + "\n" +
                      "tpufleet-check sudo " + (no_sudo_.count(alias) ? "no" : "yes") + "\n";
    if (sha.empty()) {
      return out;
    }
    if (stopped_.count(alias)) {
      return out + "tpufleet-check hello tpufleet-agent: no agent is running (" +
             std::string(api::kAgentSocketPath) + ": Connection refused)\n";
    }
    api::AgentHello hello;
    hello.binary_sha256 = sha;
    return out + "tpufleet-check hello " + api::AnswerLine({Status::Ok(), hello}) + "\n";
  }

  FakeFanout& fanout_;
  std::vector<Call> calls_;
  std::map<std::string, int> refusals_;  // logins so far per worker
  std::map<std::string, std::pair<int, std::string>> failing_;
  int refuse_first_ = 0;
  std::map<std::string, std::string> agents_;  // alias: the installed agent's hash
  std::map<std::string, std::string> prometheus_;  // alias: its unit's --prometheus port
  std::set<std::string> stopped_;
  std::set<std::string> no_sudo_;
  std::map<std::string, std::pair<int, std::string>> failing_install_;
  std::map<std::string, std::string> failing_mount_;
  int installs_ = 0;
};

/// A node someone else made in the cloud (not tpufleet): in `zone`, with `labels`.
inline CreateNodeRequest ForeignNode(const std::string& zone, const std::string& id,
                                     const std::string& type,
                                     std::map<std::string, std::string> labels) {
  CreateNodeRequest r;
  r.zone = zone;
  r.node_id = id;
  r.type = type;
  r.labels = std::move(labels);
  return r;
}

inline Catalog TestCatalog() {
  Catalog builtin = ParseCatalog(BuiltinCatalogYaml(), "built-in catalog").value();
  return ParseCatalog("families:\n  v4:\n    zones: [us-central2-b, us-central2-a]\n",
                      "test overlay", builtin)
      .value();
}

class TestWorld {
 public:
  TestWorld()
      : catalog(TestCatalog()),
        store(SqliteStore::Open(":memory:").value()),
        cloud(catalog, kProject),
        providers(cloud),
        world{*store,
              clock,
              providers,
              ssh,
              fanout,
              fanout,
              keys,
              ssh_files,
              forwarder,
              {dir.path() + "/state/ssh", "", "", dir.Write("bin/tpufleet-agent", "agent v1")},
              "tester"} {}

  /// The same world with other providers (an ssh-hosts provider's test).
  World WithProviders(ProviderSource& other) {
    return World{*store, clock, other, ssh, fanout, fanout, keys, ssh_files, forwarder,
                 world.paths, world.login};
  }

  /// A spec from YAML; the test fails (and an empty spec comes back) when it is bad.
  FleetSpec Spec(const std::string& yaml) {
    Result<FleetSpec> spec = ParseFleetSpec(yaml, "fleet.yaml", catalog);
    EXPECT_TRUE(spec.ok()) << spec.status().ToString();
    return spec.ok() ? *spec : FleetSpec{};
  }

  /// Runs up with small timeouts (fake time) and returns its report.
  UpReport Up(const FleetSpec& spec, UpOptions options = {}) {
    Result<UpReport> r = tpufleet::Up(spec, catalog, world, options, progress);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : UpReport{};
  }

  std::vector<NodeRecord> Records(const std::string& fleet = "") {
    return store->Nodes(fleet).value();
  }
  /// The stored record of `name`; a default record when there is none.
  NodeRecord Record(const std::string& name) {
    for (NodeRecord& r : Records()) {
      if (r.name == name) {
        return r;
      }
    }
    ADD_FAILURE() << "no record for " << name;
    return {};
  }
  std::vector<EventRecord> Events(const std::string& kind, const std::string& node = "") {
    EventQuery q;
    q.kind = kind;
    q.node = node;
    return store->Events(q).value();
  }

  std::string SshConfig() { return ssh_files.config(); }
  std::string KnownHosts() { return ssh_files.known_hosts(); }
  /// The fleet key's public half, as up puts it on nodes.
  std::string FleetPublicKey() { return FakeFleetKeys::kPublicKey; }
  /// The SHA-256 of the CLI's agent binary (world.paths.agent_binary), as up compares it.
  std::string AgentSha256() {
    return HexEncode(Sha256(ReadFile(world.paths.agent_binary).value()));
  }

  TempDir dir;
  Catalog catalog;
  FakeClock clock;
  std::unique_ptr<SqliteStore> store;
  FakeCloud cloud;
  FakeSshRunner ssh;
  FakeFanout fanout;
  FakeWorkers workers{fanout};
  FakeProviders providers;
  FakeFleetKeys keys{dir.path() + "/state/ssh"};
  FakeSshFiles ssh_files{dir.path() + "/state/ssh"};
  FakeForwarder forwarder;
  ProgressLog progress;
  World world;
};

}  // namespace tpufleet::testing
