// `tpufleet cp SOURCE... DEST`: files and directories to every worker, and back.
#include <chrono>
#include <ostream>

#include "api/workers.h"
#include "cli/command.h"
#include "cli/fleet_world.h"
#include "cli/json_reports.h"
#include "control/copy.h"

namespace tpufleet::cli {

ExitStatus RunCopy(Invocation& inv) {
  const auto& pos = inv.args.positional;
  if (pos.size() < 2) {
    return UsageError(inv, "cp takes sources and a destination, e.g. tpufleet cp ./src "
                           "pod:~/code or tpufleet cp pod:3:~/out .");
  }
  CopyRequest request;
  request.sources.assign(pos.begin(), pos.end() - 1);
  request.destination = pos.back();
  request.relay = !inv.args.Has("no-relay");
  auto connect = DurationFlag(inv, "connect-timeout", std::chrono::seconds(10));
  if (!connect) {
    return ExitStatus::kUsage;
  }
  request.connect_timeout = *connect;
  Result<std::unique_ptr<WorldHandle>> handle = OpenWorld(inv, false);
  if (!handle.ok()) {
    return Fail(inv, handle.status());
  }
  auto start = std::chrono::steady_clock::now();
  Result<CopyReport> report = Copy((*handle)->world(), request);
  if (!report.ok()) {
    return Fail(inv, report.status());
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  size_t relayed = 0, failed = 0;
  for (const auto& w : report->workers) {
    relayed += w.ok && w.how == "relay";
    failed += !w.ok;
  }
  if (inv.json) {
    inv.out << api::ToJson(ToApi(*report, seconds)) << "\n";
  } else {
    size_t n = report->workers.size();
    double b = static_cast<double>(report->bytes);
    char size[32];
    std::snprintf(size, sizeof size, b >= (1 << 20) ? "%.1f MiB" : "%.1f KiB",
                  b / (b >= (1 << 20) ? (1 << 20) : 1024));
    char line[200];
    if (report->download) {
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
  for (const std::string& event : report->security_events) {
    inv.err << "tpufleet: SECURITY: relay " << event << "\n";
  }
  if (!report->security_events.empty()) {
    inv.err << "tpufleet: SECURITY: " << report->security_events.size()
            << " relay event(s): something on a worker or the network between them tried to "
               "read or change this copy; the workers concerned got it directly over SSH\n";
  }
  if (failed) {
    inv.err << "tpufleet: " << failed << " of " << report->workers.size()
            << " workers failed:\n";
    for (const auto& w : report->workers) {
      if (!w.ok) {
        inv.err << "  " << w.worker.name << ": " << w.message << "\n";
      }
    }
    return ExitStatus::kFailure;
  }
  return report->ok() ? ExitStatus::kOk : ExitStatus::kFailure;
}

}  // namespace tpufleet::cli
