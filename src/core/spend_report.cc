#include "core/spend_report.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <utility>

#include "core/ledger.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

constexpr std::array<std::pair<std::string_view, SpendGrouping>, 3> kGroupings = {{
    {"fleet", SpendGrouping::kFleet},
    {"node", SpendGrouping::kNode},
    {"person", SpendGrouping::kPerson},
}};

std::string KeyOf(const SpendRecord& s, SpendGrouping by) {
  switch (by) {
    case SpendGrouping::kFleet:
      return s.fleet;
    case SpendGrouping::kNode:
      return s.fleet + "/" + s.node;
    case SpendGrouping::kPerson:
      return s.owner;
  }
  return s.fleet;
}

double Hours(Clock::WallTime::duration d) {
  return std::chrono::duration<double, std::ratio<3600>>(d).count();
}

}  // namespace

std::string_view SpendGroupingName(SpendGrouping by) {
  for (const auto& [word, g] : kGroupings) {
    if (g == by) {
      return word;
    }
  }
  return "fleet";
}

Result<SpendGrouping> ParseSpendGrouping(std::string_view word) {
  std::vector<std::string> words;
  for (const auto& [w, g] : kGroupings) {
    if (w == word) {
      return g;
    }
    words.emplace_back(w);
  }
  return InvalidArgumentError("\"" + std::string(word) + "\" is not one of " +
                              Join(words, ", ") + DidYouMean(word, words));
}

SpendReport ReportSpend(const std::vector<SpendRecord>& stretches, SpendGrouping by,
                        Clock::WallTime from, Clock::WallTime now) {
  SpendReport r;
  r.from = from;
  r.now = now;
  std::map<std::string, SpendLine> lines;
  for (const SpendRecord& s : stretches) {
    if (!NodeState::Parse(s.state).IsBilled()) {
      continue;  // recorded to show time in a state, never billed
    }
    std::string key = KeyOf(s, by);
    Clock::WallTime start = std::max(s.start, from);
    Clock::WallTime end = std::min(s.end.value_or(now), now);
    bool bills_now = !s.end && s.start <= now;
    if (end <= start && !bills_now) {
      continue;
    }
    SpendLine& line = lines[key];
    line.key = key;
    if (end > start) {
      line.node_hours += Hours(end - start);
      line.usd += s.usd_per_hour * Hours(end - start);
    }
    if (bills_now) {
      line.usd_per_hour += s.usd_per_hour;
    }
  }
  for (auto& [key, line] : lines) {
    r.usd += line.usd;
    r.usd_per_hour += line.usd_per_hour;
    r.lines.push_back(std::move(line));
  }
  std::stable_sort(r.lines.begin(), r.lines.end(),
                   [](const SpendLine& a, const SpendLine& b) { return a.usd > b.usd; });
  r.today_usd = SpendBetween(stretches, UtcDayStart(now), now);
  r.month_usd = SpendBetween(stretches, UtcMonthStart(now), now);
  Clock::WallTime tomorrow = UtcDayStart(now) + std::chrono::days(1);
  r.forecast_day_usd = r.today_usd + r.usd_per_hour * Hours(tomorrow - now);
  r.forecast_month_usd = r.month_usd + r.usd_per_hour * Hours(UtcNextMonthStart(now) - now);
  return r;
}

Clock::WallTime UtcMonthStart(Clock::WallTime t) {
  std::chrono::year_month_day day{std::chrono::floor<std::chrono::days>(t)};
  return std::chrono::sys_days{day.year() / day.month() / 1};
}

Clock::WallTime UtcNextMonthStart(Clock::WallTime t) {
  std::chrono::year_month_day day{std::chrono::floor<std::chrono::days>(t)};
  return std::chrono::sys_days{(day.year() / day.month() / 1) + std::chrono::months(1)};
}

}  // namespace tpufleet
