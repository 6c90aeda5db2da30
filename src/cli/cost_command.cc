// `tpufleet cost [--by person|node|fleet|job|day] [--since DUR|TIME] [--csv] [--goodput]`:
// the spend ledger (core/spend_report.h: the store's stretches shared among the jobs'
// runs) as a table, CSV or --json, with the day's and the month's forecast at the current
// rate and each fleet's budget left; with --goodput, where the paid time went instead
// (core/goodput.h), and a verdict. Through a team server a caller sees what control/visible.h
// allows: an admin their fleets' whole ledger and budgets, anyone else what is billed to
// them.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ostream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/fleet_world.h"
#include "control/preemption_gaps.h"
#include "control/visible.h"
#include "core/goodput.h"
#include "core/ledger.h"
#include "core/spend_report.h"
#include "util/log.h"
#include "util/strings.h"
#include "util/text_table.h"
#include "util/timestamp.h"

namespace tpufleet::cli {
namespace {

// How far back `cost` looks when --since is not given.
constexpr char kDefaultSince[] = "30d";

// One CSV field: quoted when it holds a comma, a quote or a line break.
std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) {
    return text;
  }
  std::string out = "\"";
  for (char c : text) {
    out += c == '"' ? std::string("\"\"") : std::string(1, c);
  }
  return out + "\"";
}

std::string Hours(double h) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", h);
  return buf;
}

std::string Rate(double usd_per_hour) {
  return usd_per_hour > 0 ? FormatUsd(usd_per_hour) + "/h" : "-";
}

// A fleet's budget and what is left of it now.
struct BudgetLeft {
  FleetRecord fleet;
  BudgetState state;
};

std::vector<BudgetLeft> BudgetsLeft(const std::vector<FleetRecord>& fleets,
                                    const std::vector<SpendRecord>& ledger, Clock::WallTime now) {
  std::vector<BudgetLeft> out;
  for (const FleetRecord& f : fleets) {
    if (!f.usd_per_day && !f.usd_total) {
      continue;
    }
    std::vector<SpendRecord> own;
    for (const SpendRecord& s : ledger) {
      if (s.fleet == f.name) {
        own.push_back(s);
      }
    }
    BudgetSpec spec;
    spec.usd_per_day = f.usd_per_day;
    spec.usd_total = f.usd_total;
    out.push_back({f, CheckBudget(spec, own, now)});
  }
  return out;
}

// By job, a line's job apart from its "name (id)" key: null for the time no job ran.
void AddJobFields(nlohmann::json& line, SpendGrouping by, const std::string& id,
                  const std::string& name) {
  if (by != SpendGrouping::kJob) {
    return;
  }
  line["job_id"] = id.empty() ? nlohmann::json(nullptr) : nlohmann::json(id);
  line["job_name"] = id.empty() ? nlohmann::json(nullptr) : nlohmann::json(name);
}

nlohmann::json OrNull(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// A day's spend per person, most first: [{"person", "usd"}] ("" for no one).
nlohmann::json PersonsJson(const std::map<std::string, double>& usd_by_person) {
  std::vector<std::pair<std::string, double>> sorted(usd_by_person.begin(), usd_by_person.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [person, usd] : sorted) {
    out.push_back({{"person", person}, {"usd", usd}});
  }
  return out;
}

void PrintJson(Invocation& inv, const SpendReport& r, SpendGrouping by,
               const std::vector<BudgetLeft>& budgets) {
  std::string key(SpendGroupingName(by));
  nlohmann::json lines = nlohmann::json::array();
  for (const SpendLine& l : r.lines) {
    lines.push_back({{key, l.key},
                     {"usd", l.usd},
                     {"node_hours", l.node_hours},
                     {"usd_per_hour", l.usd_per_hour}});
    AddJobFields(lines.back(), by, l.job_id, l.job_name);
    if (by == SpendGrouping::kDay) {
      lines.back()["persons"] = PersonsJson(l.usd_by_person);
    }
  }
  nlohmann::json out_budgets = nlohmann::json::array();
  for (const BudgetLeft& b : budgets) {
    std::optional<double> left_day, left_total;
    if (b.fleet.usd_per_day) {
      left_day = *b.fleet.usd_per_day - b.state.spent_day;
    }
    if (b.fleet.usd_total) {
      left_total = *b.fleet.usd_total - b.state.spent_total;
    }
    out_budgets.push_back({{"fleet", b.fleet.name},
                           {"usd_per_day", OrNull(b.fleet.usd_per_day)},
                           {"left_today_usd", OrNull(left_day)},
                           {"usd_total", OrNull(b.fleet.usd_total)},
                           {"left_total_usd", OrNull(left_total)},
                           {"reached", b.state.reached}});
  }
  nlohmann::json out = {{"by", key},
                        {"since", FormatTimestamp(r.from)},
                        {"now", FormatTimestamp(r.now)},
                        {"lines", lines},
                        {"usd", r.usd},
                        {"usd_per_hour", r.usd_per_hour},
                        {"today_usd", r.today_usd},
                        {"forecast_day_usd", r.forecast_day_usd},
                        {"month_usd", r.month_usd},
                        {"forecast_month_usd", r.forecast_month_usd},
                        {"budgets", out_budgets}};
  inv.out << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

void PrintCsv(Invocation& inv, const SpendReport& r, SpendGrouping by) {
  inv.out << SpendGroupingName(by) << ",usd,node_hours,usd_per_hour\n";
  for (const SpendLine& l : r.lines) {
    char numbers[96];
    std::snprintf(numbers, sizeof numbers, ",%.2f,%.3f,%.2f\n", l.usd, l.node_hours,
                  l.usd_per_hour);
    inv.out << CsvField(l.key) << numbers;
  }
}

void PrintTable(Invocation& inv, const SpendReport& r, SpendGrouping by,
                const std::string& since_text, const std::vector<BudgetLeft>& budgets) {
  inv.out << "Spend since " << FormatTimestamp(r.from) << " (" << since_text << "), by "
          << SpendGroupingName(by) << ", at list prices (spot at the most it can cost):\n";
  if (r.lines.empty()) {
    inv.out << "Nothing billed. The ledger is written while `tpufleet serve` keeps the fleet\n"
               "(docs/cost.md).\n";
  } else {
    std::string head(SpendGroupingName(by));
    std::transform(head.begin(), head.end(), head.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    TextTable t({head, "SPENT", "NODE-HOURS", "NOW"});
    double hours = 0;
    for (const SpendLine& l : r.lines) {
      // Names come from specs and people: shown as text, never as terminal controls.
      t.AddRow({TerminalText(ShownSpendKey(l.key, by)), FormatUsd(l.usd), Hours(l.node_hours),
                Rate(l.usd_per_hour)});
      hours += l.node_hours;
    }
    t.AddRow({"TOTAL", FormatUsd(r.usd), Hours(hours), Rate(r.usd_per_hour)});
    t.Print(inv.out);
  }
  inv.out << "\nToday (UTC): " << FormatUsd(r.today_usd) << " spent; "
          << FormatUsd(r.forecast_day_usd) << " by midnight UTC at " << Rate(r.usd_per_hour)
          << ".\nThis month (UTC): " << FormatUsd(r.month_usd) << " spent; "
          << FormatUsd(r.forecast_month_usd) << " by "
          << FormatTimestamp(UtcNextMonthStart(r.now)).substr(0, 10) << " at "
          << Rate(r.usd_per_hour) << ".\n";
  for (const BudgetLeft& b : budgets) {
    std::vector<std::string> parts;
    if (b.fleet.usd_per_day) {
      parts.push_back("usd_per_day " + FormatUsd(*b.fleet.usd_per_day) + ", " +
                      FormatUsd(*b.fleet.usd_per_day - b.state.spent_day) + " left today");
    }
    if (b.fleet.usd_total) {
      parts.push_back("usd_total " + FormatUsd(*b.fleet.usd_total) + ", " +
                      FormatUsd(*b.fleet.usd_total - b.state.spent_total) + " left");
    }
    inv.out << "Budget of " << b.fleet.name << ": " << Join(parts, "; ")
            << (b.state.reached ? " (reached)" : "") << ".\n";
  }
}

// A part of a line's paid time, as a whole percent of it.
std::string Share(double part, double whole) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f %%", whole > 0 ? 100 * part / whole : 0);
  return buf;
}

nlohmann::json SplitJson(const GoodputSplit& s) {
  return {{"busy", s.busy},
          {"preempted", s.preempted},
          {"idle", s.idle},
          {"input_bound", s.input_bound},
          {"other", s.other},
          {"unmeasured", s.unmeasured}};
}

void PrintGoodput(Invocation& inv, const GoodputReport& r, SpendGrouping by,
                  const std::string& since_text, bool measured) {
  std::string key(SpendGroupingName(by));
  if (inv.json) {
    nlohmann::json lines = nlohmann::json::array();
    for (const GoodputLine& l : r.lines) {
      lines.push_back({{key, l.key},
                       {"usd", l.usd},
                       {"node_hours", l.node_hours},
                       {"chip_hours", l.chip_hours},
                       {"hours", SplitJson(l.hours)},
                       {"usd_split", SplitJson(l.usd_split)}});
      AddJobFields(lines.back(), by, l.job_id, l.job_name);
    }
    nlohmann::json out = {{"by", key},
                          {"since", FormatTimestamp(r.from)},
                          {"now", FormatTimestamp(r.now)},
                          {"lines", lines},
                          {"usd", r.total.usd},
                          {"node_hours", r.total.node_hours},
                          {"chip_hours", r.total.chip_hours},
                          {"hours", SplitJson(r.total.hours)},
                          {"usd_split", SplitJson(r.total.usd_split)},
                          {"measured", measured},
                          {"verdict", r.verdict}};
    inv.out << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return;
  }
  if (inv.args.Has("csv")) {
    inv.out << key
            << ",usd,node_hours,chip_hours,busy_hours,preempted_hours,idle_hours,"
               "input_bound_hours,other_hours,unmeasured_hours\n";
    for (const GoodputLine& l : r.lines) {
      char numbers[224];
      std::snprintf(numbers, sizeof numbers, ",%.2f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n",
                    l.usd, l.node_hours, l.chip_hours, l.hours.busy, l.hours.preempted,
                    l.hours.idle, l.hours.input_bound, l.hours.other, l.hours.unmeasured);
      inv.out << CsvField(l.key) << numbers;
    }
    return;
  }
  inv.out << "Goodput since " << FormatTimestamp(r.from) << " (" << since_text << "), by " << key
          << ": where the spend went.\n";
  if (r.lines.empty()) {
    inv.out << "Nothing billed. The ledger is written while `tpufleet serve` keeps the fleet\n"
               "(docs/cost.md).\n";
    return;
  }
  std::string head = key;
  std::transform(head.begin(), head.end(), head.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  TextTable t({head, "SPENT", "CHIP-HOURS", "BUSY", "PREEMPTED", "IDLE", "INPUT-BOUND", "OTHER",
               "UNMEASURED"});
  // Shares of the line's spend (the TOTAL's are the verdict's); of its node-hours when
  // it cost nothing (reserved capacity).
  auto row = [&](const std::string& shown, const GoodputLine& l) {
    const GoodputSplit& u = l.usd > 0 ? l.usd_split : l.hours;
    double whole = l.usd > 0 ? l.usd : l.node_hours;
    t.AddRow({shown, FormatUsd(l.usd), Hours(l.chip_hours), Share(u.busy, whole),
              Share(u.preempted, whole), Share(u.idle, whole), Share(u.input_bound, whole),
              Share(u.other, whole), Share(u.unmeasured, whole)});
  };
  for (const GoodputLine& l : r.lines) {
    row(TerminalText(ShownSpendKey(l.key, by)), l);
  }
  row("TOTAL", r.total);
  t.Print(inv.out);
  inv.out << "\n" << TerminalText(r.verdict) << "\n";
  if (!measured) {
    inv.out << "No agent measured these nodes in the span: busy, idle and input-bound time come\n"
               "from serve's metrics rounds on nodes with the agent (docs/cost.md).\n";
  }
}

}  // namespace

ExitStatus RunCost(Invocation& inv) {
  if (!inv.args.positional.empty()) {
    return UsageError(inv,
                      "cost takes no arguments: tpufleet cost [--by person|node|fleet|job|day] "
                      "[--since D] [--csv] [--goodput]");
  }
  Result<SpendGrouping> by = ParseSpendGrouping(inv.args.Get("by").value_or("person"));
  if (!by.ok()) {
    return UsageError(inv, "--by: " + by.status().message());
  }
  if (inv.json && inv.args.Has("csv")) {
    return UsageError(inv, "--csv and --json: give one");
  }
  Result<std::unique_ptr<WorldHandle>> handle = OpenWorld(inv, false);
  if (!handle.ok()) {
    return Fail(inv, handle.status());
  }
  World& world = (*handle)->world();
  Clock::WallTime now = world.clock.Now();
  std::string since_text = inv.args.Get("since").value_or(kDefaultSince);
  Result<Clock::WallTime> since = SinceTime(since_text, now);
  if (!since.ok()) {
    return UsageError(inv, since.status().message());
  }
  if (*since > now) {
    return UsageError(inv, "--since " + since_text + " is in the future");
  }
  // Every stretch: a fleet's budget counts its whole life, the report its span.
  Result<std::vector<SpendRecord>> ledger = world.store.Spend("", std::nullopt);
  if (!ledger.ok()) {
    return Fail(inv, ledger.status());
  }
  Result<std::vector<FleetRecord>> fleets = world.store.Fleets();
  if (!fleets.ok()) {
    return Fail(inv, fleets.status());
  }
  Result<std::vector<JobRunRecord>> runs = world.store.JobRuns("", std::nullopt);
  if (!runs.ok()) {
    return Fail(inv, runs.status());
  }
  // A budget is the whole fleet's, seen by its admins alone (VisibleFleets).
  std::vector<BudgetLeft> budgets =
      BudgetsLeft(VisibleFleets(inv.access, std::move(*fleets)), *ledger, now);
  std::vector<SpendShare> shares = ShareSpend(*ledger, *runs);
  if (inv.args.Has("goodput")) {
    Result<const Catalog*> catalog = inv.LoadCatalog();
    if (!catalog.ok()) {
      return Fail(inv, catalog.status());
    }
    Result<std::vector<UsageRecord>> usage = world.store.Usage("", *since);
    if (!usage.ok()) {
      return Fail(inv, usage.status());
    }
    Result<std::vector<PreemptionGap>> gaps = ReadPreemptionGaps(world.store, *since, now);
    if (!gaps.ok()) {
      return Fail(inv, gaps.status());
    }
    // Every share, for the usage rows to find their jobs; the lines are the caller's.
    GoodputReport report =
        ReportGoodput(shares, *usage, *gaps, **catalog, *by, *since, now,
                      [&](const SpendShare& s) { return MaySeeShare(inv.access, s); });
    PrintGoodput(inv, report, *by, since_text, !usage->empty());
    return ExitStatus::kOk;
  }
  SpendReport report = ReportSpend(VisibleSpend(inv.access, std::move(shares)), *by, *since, now);
  if (inv.json) {
    PrintJson(inv, report, *by, budgets);
  } else if (inv.args.Has("csv")) {
    PrintCsv(inv, report, *by);
  } else {
    PrintTable(inv, report, *by, since_text, budgets);
  }
  return ExitStatus::kOk;
}

}  // namespace tpufleet::cli
