// `tpufleet audit [--since DUR|TIME] [--limit N]`: the team server's audit log (store:
// audit table, written by server/audit.h), oldest first, as a table or --json. Through a
// team server it is for those who may see every fleet (control/visible.h); here, for
// whoever holds the state, as every command.
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/command.h"
#include "cli/fleet_world.h"
#include "control/visible.h"
#include "util/log.h"
#include "util/text_table.h"
#include "util/timestamp.h"

namespace tpufleet::cli {
namespace {

// The lines shown when --limit is not given, and the most it may ask for (a bounded
// answer, through a server too).
constexpr int64_t kDefaultAuditLines = 100;
constexpr int64_t kMaxAuditLines = 10000;

}  // namespace

ExitStatus RunAudit(Invocation& inv) {
  if (!inv.args.positional.empty()) {
    return UsageError(inv, "audit takes no arguments: tpufleet audit [--since D] [--limit N]");
  }
  std::optional<double> limit = NumberFlag(inv, "limit", kDefaultAuditLines, 1, kMaxAuditLines);
  if (!limit) {
    return ExitStatus::kUsage;
  }
  Result<std::unique_ptr<WorldHandle>> handle = OpenWorld(inv, false);
  if (!handle.ok()) {
    return Fail(inv, handle.status());
  }
  World& world = (*handle)->world();
  Result<bool> allowed = MaySeeAllFleets(world.store, inv.access);
  if (!allowed.ok()) {
    return Fail(inv, allowed.status());
  }
  if (!*allowed) {
    return Fail(inv, PermissionDeniedError("the audit log is for the admins of every fleet; " +
                                           inv.access.who() + " is not one"));
  }
  std::optional<Clock::WallTime> since;
  if (std::optional<std::string> text = inv.args.Get("since")) {
    Result<Clock::WallTime> t = SinceTime(*text, world.clock.Now());
    if (!t.ok()) {
      return UsageError(inv, t.status().message());
    }
    since = *t;
  }
  Result<std::vector<AuditRecord>> lines =
      world.store.Audit(since, static_cast<int64_t>(*limit));
  if (!lines.ok()) {
    return Fail(inv, lines.status());
  }
  if (inv.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const AuditRecord& a : *lines) {
      out.push_back({{"id", a.id},
                     {"time", FormatTimestamp(a.time)},
                     {"person", a.person},
                     {"action", a.action},
                     {"outcome", a.outcome}});
    }
    inv.out << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return ExitStatus::kOk;
  }
  if (lines->empty()) {
    inv.out << "No audit lines.\n";
    return ExitStatus::kOk;
  }
  TextTable t({"TIME", "PERSON", "ACTION", "OUTCOME"});
  for (const AuditRecord& a : *lines) {
    // What people sent is shown as text, never as terminal controls.
    t.AddRow({FormatTimestamp(a.time), TerminalText(a.person), TerminalText(a.action),
              TerminalText(a.outcome)});
  }
  t.Print(inv.out);
  return ExitStatus::kOk;
}

}  // namespace tpufleet::cli
