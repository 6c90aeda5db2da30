// `tpufleet cp SOURCE... DEST`: files and directories to every worker, and back; through a
// team server, one `scp` per worker as the person themself (cli/served_ssh.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <ostream>

#include "api/workers.h"
#include "cli/command.h"
#include "cli/fleet_world.h"
#include "cli/json_reports.h"
#include "cli/served_ssh.h"
#include "control/copy.h"
#include "control/ssh_processes.h"
#include "util/log.h"
#include "util/strings.h"

namespace tpufleet::cli {

namespace {

// At most this many `scp` run at once through a team server: each is a process and a
// connection of its own, and they share this machine's uplink, which a handful fills.
constexpr size_t kServedCopyParallel = 8;
// What cp keeps of a worker's scp messages, for its failure line.
constexpr size_t kCopyMessageBytes = 2048;

// cp's request from its words and flags; nullopt when one was wrong (said already, in
// `*failed`).
std::optional<CopyRequest> ParseCopy(Invocation& inv, ExitStatus* failed) {
  *failed = ExitStatus::kUsage;
  const auto& pos = inv.args.positional;
  if (pos.size() < 2) {
    UsageError(inv, "cp takes sources and a destination, e.g. tpufleet cp ./src "
                    "pod:~/code or tpufleet cp pod:3:~/out .");
    return std::nullopt;
  }
  CopyRequest request;
  request.sources.assign(pos.begin(), pos.end() - 1);
  request.destination = pos.back();
  request.relay = !inv.args.Has("no-relay");
  auto connect = DurationFlag(inv, "connect-timeout", std::chrono::seconds(10));
  if (!connect) {
    return std::nullopt;
  }
  request.connect_timeout = *connect;
  return request;
}

// The summary of a copy that took `seconds`, and its exit status.
ExitStatus PrintCopy(Invocation& inv, const CopyRequest& request, const CopyReport& report,
                     double seconds) {
  size_t relayed = 0, failed = 0;
  for (const auto& w : report.workers) {
    relayed += w.ok && w.how == "relay";
    failed += !w.ok;
  }
  if (inv.json) {
    inv.out << api::ToJson(ToApi(report, seconds)) << "\n";
  } else {
    size_t n = report.workers.size();
    double b = static_cast<double>(report.bytes);
    char size[32];
    std::snprintf(size, sizeof size, b >= (1 << 20) ? "%.1f MiB" : "%.1f KiB",
                  b / (b >= (1 << 20) ? (1 << 20) : 1024));
    char line[200];
    if (report.download) {
      std::snprintf(line, sizeof line, "Copied from %zu of %zu workers into %s in %.1f s.\n",
                    n - failed, n,
                    (request.destination + (n > 1 ? "/NODE-wN" : "")).c_str(), seconds);
    } else {
      std::string via =
          relayed ? " (" + std::to_string(relayed) + " through the relay chain)" : "";
      std::snprintf(line, sizeof line, "Copied %s to %zu of %zu workers in %.1f s%s.\n", size,
                    n - failed, n, seconds, via.c_str());
    }
    inv.out << line;
  }
  for (const std::string& event : report.security_events) {
    inv.err << "tpufleet: SECURITY: relay " << event << "\n";
  }
  if (!report.security_events.empty()) {
    inv.err << "tpufleet: SECURITY: " << report.security_events.size()
            << " relay event(s): something on a worker or the network between them tried to "
               "read or change this copy; the workers concerned got it directly over SSH\n";
  }
  if (failed) {
    inv.err << "tpufleet: " << failed << " of " << report.workers.size()
            << " workers failed:\n";
    for (const auto& w : report.workers) {
      if (!w.ok) {
        inv.err << "  " << w.worker.name << ": " << w.message << "\n";
      }
    }
    return ExitStatus::kFailure;
  }
  return report.ok() ? ExitStatus::kOk : ExitStatus::kFailure;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Each worker's scp result and the start of what it said.
class CopyResults final : public FanoutSink {
 public:
  explicit CopyResults(const std::vector<WorkerTarget>& workers) {
    for (const WorkerTarget& w : workers) {
      outcomes_.push_back({w, false, "ssh", ""});
    }
  }
  void OnOutput(size_t host, OutputStream, std::string_view data) override {
    std::string& m = outcomes_[host].message;
    m.append(data.substr(0, kCopyMessageBytes - std::min(m.size(), kCopyMessageBytes)));
  }
  void OnResult(size_t host, const HostResult& result) override {
    CopyOutcome& o = outcomes_[host];
    o.ok = result.ok();
    std::string said = TerminalText(Trim(o.message), false);
    o.message = o.ok ? "" : !said.empty() ? said
                   : !result.message.empty() ? result.message
                                             : "scp exited with status " +
                                                   std::to_string(result.exit_code);
  }
  std::vector<CopyOutcome> outcomes() && { return std::move(outcomes_); }

 private:
  std::vector<CopyOutcome> outcomes_;
};

// The bytes of the files under `path` (a file, or a directory's regular files).
Result<uint64_t> SourceBytes(const std::string& path) {
  std::error_code ec;
  std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) {
    return InvalidArgumentError("cannot read " + path + ": no such file or directory");
  }
  if (!std::filesystem::is_directory(st)) {
    return static_cast<uint64_t>(std::filesystem::file_size(path, ec));
  }
  uint64_t bytes = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(path, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) {
      bytes += it->file_size(ec);
    }
  }
  return bytes;
}

// `scp` of the config, its options ended by "--": modes and times kept, directories
// whole, no prompt (several run at once).
std::vector<std::string> ScpArgv(const ServerLogins& logins, const CopyRequest& request) {
  auto connect_s = std::chrono::ceil<std::chrono::seconds>(request.connect_timeout).count();
  std::string timeout = "ConnectTimeout=" + std::to_string(connect_s);
  return {"scp", "-F", logins.ssh.config.path(), "-p", "-r", "-B", "-o", timeout, "--"};
}

}  // namespace

ExitStatus RunCopy(Invocation& inv) {
  ExitStatus failed = ExitStatus::kUsage;
  std::optional<CopyRequest> request = ParseCopy(inv, &failed);
  if (!request) {
    return failed;
  }
  Result<std::unique_ptr<WorldHandle>> handle = OpenWorld(inv, false);
  if (!handle.ok()) {
    return Fail(inv, handle.status());
  }
  auto start = std::chrono::steady_clock::now();
  Result<CopyReport> report = Copy((*handle)->world(), *request);
  if (!report.ok()) {
    return Fail(inv, report.status());
  }
  return PrintCopy(inv, *request, *report, SecondsSince(start));
}

ExitStatus RunCopyOverSsh(Invocation& inv, const ServerLogins& logins) {
  ExitStatus failed = ExitStatus::kUsage;
  std::optional<CopyRequest> request = ParseCopy(inv, &failed);
  if (!request) {
    return failed;
  }
  std::optional<RemotePath> dest = ParseRemotePath(request->destination);
  std::optional<RemotePath> from = ParseRemotePath(request->sources[0]);
  if (dest.has_value() == from.has_value() || (from && request->sources.size() != 1)) {
    return UsageError(inv, "cp copies local files to TARGET:PATH, or one TARGET:PATH here: "
                           "tpufleet cp ./src pod:~/code, tpufleet cp pod:3:~/out .");
  }
  const RemotePath& remote = dest ? *dest : *from;
  if (Status s = RefuseLabelSelectors({remote.target}); !s.ok()) {
    return UsageError(inv, s.message());
  }
  Result<std::vector<WorkerTarget>> workers = ResolveTargets(logins.nodes, {remote.target});
  if (!workers.ok()) {
    return Fail(inv, workers.status());
  }
  CopyReport report;
  report.download = from.has_value();
  SshProcessJob job;
  job.max_parallel = kServedCopyParallel;
  for (const WorkerTarget& w : *workers) {
    std::vector<std::string> argv = ScpArgv(logins, *request);
    std::string there = w.alias + ":" + (remote.path.empty() ? "." : remote.path);
    if (dest) {
      argv.insert(argv.end(), request->sources.begin(), request->sources.end());
      argv.push_back(there);
    } else {
      // From several workers, each into a directory of its own, as the local cp does.
      std::string into = request->destination;
      if (workers->size() > 1) {
        into += "/" + w.alias + "/";
        std::error_code ec;
        std::filesystem::create_directories(into, ec);
        if (ec) {
          return Fail(inv, InvalidArgumentError("cannot make " + into + ": " + ec.message()));
        }
      }
      argv.push_back(there);
      argv.push_back(into);
    }
    job.programs.push_back(std::move(argv));
  }
  for (const std::string& source : dest ? request->sources : std::vector<std::string>{}) {
    Result<uint64_t> bytes = SourceBytes(source);
    if (!bytes.ok()) {
      return Fail(inv, bytes.status());
    }
    report.bytes += *bytes;
  }
  auto start = std::chrono::steady_clock::now();
  CopyResults results(*workers);
  if (Status run = RunSshProcesses(job, results); !run.ok()) {
    return Fail(inv, run);
  }
  report.workers = std::move(results).outcomes();
  return PrintCopy(inv, *request, report, SecondsSince(start));
}

}  // namespace tpufleet::cli
