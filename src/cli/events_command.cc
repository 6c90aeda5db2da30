// `tpufleet events [NODE...] [--since DUR|TIME] [--kind K]`: the event log of the state
// store (store/store.h lists the kinds), oldest first, as a table or --json. During a
// recovery each step also shows how long after the preemption it came, so the table
// reads as the recovery's timeline; `recovered` carries the time-to-recover.
#include <algorithm>
#include <map>
#include <ostream>
#include <set>

#include "api/fleet.h"
#include "cli/command.h"
#include "cli/fleet_world.h"
#include "cli/job_output.h"
#include "control/visible.h"
#include "util/strings.h"
#include "util/text_table.h"
#include "util/timestamp.h"

namespace tpufleet::cli {
namespace {

// The events that start a recovery's timeline, and the one that ends it.
bool StartsRecovery(const EventRecord& e) {
  return e.kind == "preempted" || e.kind == "detected";
}

// Each event's STEP: how long after its node's preemption it came, while the node
// recovers (from the first preempted/detected to recovered); "" outside one.
std::vector<std::string> Steps(const std::vector<EventRecord>& events) {
  std::map<std::string, Clock::WallTime> lost_at;  // by fleet/node, while recovering
  std::vector<std::string> steps;
  for (const EventRecord& e : events) {
    std::string key = e.fleet + "/" + e.node;
    auto it = lost_at.find(key);
    if (it == lost_at.end() && StartsRecovery(e)) {
      it = lost_at.emplace(key, e.time).first;
    }
    if (it == lost_at.end()) {
      steps.emplace_back();
      continue;
    }
    steps.push_back("+" +
                    FormatSeconds(std::chrono::duration<double>(e.time - it->second).count()));
    if (e.kind == "recovered") {
      lost_at.erase(it);
    }
  }
  return steps;
}

// The events of `nodes` (none: every node) that `access` may see (control/visible.h),
// oldest first; NotFound for a name that is neither a node nor in the log, or one of a
// node the caller may not see (said alike, so that it tells them nothing).
Result<std::vector<EventRecord>> Read(World& world, const Access& access, EventQuery query,
                                      const std::vector<std::string>& nodes) {
  if (nodes.empty()) {
    return VisibleEvents(world.store, access, query);
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> records, world.store.Nodes(""));
  std::vector<EventRecord> all;
  for (const std::string& node : std::set<std::string>(nodes.begin(), nodes.end())) {
    query.node = node;
    TPUFLEET_ASSIGN_OR_RETURN(std::vector<EventRecord> some,
                              VisibleEvents(world.store, access, query));
    auto record = std::find_if(records.begin(), records.end(),
                               [&](const NodeRecord& r) { return r.name == node; });
    bool known = record != records.end() && access.MaySeeNode(*record);
    if (some.empty() && !known) {
      EventQuery any;
      any.node = node;
      any.limit = 1;
      TPUFLEET_ASSIGN_OR_RETURN(std::vector<EventRecord> ever,
                                VisibleEvents(world.store, access, any));
      if (ever.empty()) {
        return NotFoundError("no node named " + node + " (see `tpufleet status`)");
      }
    }
    all.insert(all.end(), some.begin(), some.end());
  }
  std::sort(all.begin(), all.end(),
            [](const EventRecord& a, const EventRecord& b) { return a.id < b.id; });
  if (all.size() > query.limit) {
    all.erase(all.begin(), all.end() - static_cast<long>(query.limit));
  }
  return all;
}

}  // namespace

Result<Clock::WallTime> SinceTime(const std::string& text, Clock::WallTime now) {
  if (Result<std::chrono::seconds> d = ParseDuration(text); d.ok()) {
    return now - *d;
  }
  if (Result<Clock::WallTime> t = ParseTimestamp(text); t.ok()) {
    return *t;
  }
  return InvalidArgumentError("--since: \"" + text +
                              "\" is neither a duration (30m, 2h, 1d) nor a time "
                              "(2026-01-01T12:00:00Z)");
}

ExitStatus RunEvents(Invocation& inv) {
  EventQuery query;
  if (std::optional<std::string> kind = inv.args.Get("kind")) {
    if (kind->empty()) {
      return UsageError(inv, "--kind takes an event kind: preempted, recovered, ready, …");
    }
    query.kind = *kind;
  }
  Result<std::unique_ptr<WorldHandle>> handle = OpenWorld(inv, false);
  if (!handle.ok()) {
    return Fail(inv, handle.status());
  }
  World& world = (*handle)->world();
  if (std::optional<std::string> since = inv.args.Get("since")) {
    Result<Clock::WallTime> t = SinceTime(*since, world.clock.Now());
    if (!t.ok()) {
      return UsageError(inv, t.status().message());
    }
    query.since = *t;
  }
  Result<std::vector<EventRecord>> events = Read(world, inv.access, query, inv.args.positional);
  if (!events.ok()) {
    return Fail(inv, events.status());
  }
  if (events->size() == query.limit) {
    inv.err << "tpufleet: note: the newest " << query.limit
            << " events; --since, --kind or NODE names narrow the log\n";
  }
  if (inv.json) {
    std::vector<api::Event> out;
    for (const EventRecord& e : *events) {
      out.push_back({e.id, FormatTimestamp(e.time), e.fleet, e.node, e.kind, e.detail});
    }
    inv.out << api::ToJson(out) << "\n";
    return ExitStatus::kOk;
  }
  if (events->empty()) {
    inv.out << "No events.\n";
    return ExitStatus::kOk;
  }
  std::set<std::string> fleets;
  for (const EventRecord& e : *events) {
    fleets.insert(e.fleet);
  }
  std::vector<std::string> steps = Steps(*events);
  bool recovering =
      std::any_of(steps.begin(), steps.end(), [](const std::string& s) { return !s.empty(); });
  std::vector<std::string> header = {"TIME", "NODE", "KIND", "DETAIL"};
  if (fleets.size() > 1) {
    header.insert(header.begin() + 1, "FLEET");
  }
  if (recovering) {
    header.insert(header.begin() + 1, "STEP");
  }
  TextTable t(header);
  for (size_t i = 0; i < events->size(); ++i) {
    const EventRecord& e = (*events)[i];
    std::vector<std::string> row = {FormatTimestamp(e.time), e.node, e.kind,
                                    e.detail.empty() ? "-" : e.detail};
    if (fleets.size() > 1) {
      row.insert(row.begin() + 1, e.fleet);
    }
    if (recovering) {
      row.insert(row.begin() + 1, steps[i].empty() ? "-" : steps[i]);
    }
    t.AddRow(std::move(row));
  }
  t.Print(inv.out);
  return ExitStatus::kOk;
}

}  // namespace tpufleet::cli
