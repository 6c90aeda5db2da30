#include "core/spend_report.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <utility>

#include "core/ledger.h"
#include "util/strings.h"
#include "util/timestamp.h"

namespace tpufleet {
namespace {

constexpr std::array<std::pair<std::string_view, SpendGrouping>, 5> kGroupings = {{
    {"fleet", SpendGrouping::kFleet},
    {"node", SpendGrouping::kNode},
    {"person", SpendGrouping::kPerson},
    {"job", SpendGrouping::kJob},
    {"day", SpendGrouping::kDay},
}};

// An open stretch or run: it goes on past any time it is compared with.
constexpr Clock::WallTime kOpen = Clock::WallTime::max();

double Hours(Clock::WallTime::duration d) {
  return std::chrono::duration<double, std::ratio<3600>>(d).count();
}

}  // namespace

std::string SpendKey(const SpendShare& share, SpendGrouping by) {
  const SpendRecord& s = share.part;
  switch (by) {
    case SpendGrouping::kFleet:
      return s.fleet;
    case SpendGrouping::kNode:
      return s.fleet + "/" + s.node;
    case SpendGrouping::kPerson:
      return s.owner;
    case SpendGrouping::kJob:
      return share.job;
    case SpendGrouping::kDay:
      return FormatTimestamp(UtcDayStart(s.start)).substr(0, 10);
  }
  return s.fleet;
}

std::vector<SpendShare> SharesBy(const std::vector<SpendShare>& shares, SpendGrouping by,
                                 Clock::WallTime now) {
  if (by != SpendGrouping::kDay) {
    return shares;
  }
  std::vector<SpendShare> out;
  for (const SpendShare& share : shares) {
    Clock::WallTime end = share.part.end.value_or(std::max(now, share.part.start));
    Clock::WallTime at = share.part.start;
    for (Clock::WallTime midnight = UtcDayStart(at) + std::chrono::days(1); midnight < end;
         midnight += std::chrono::days(1)) {
      SpendShare day = share;
      day.part.start = at;
      day.part.end = midnight;
      out.push_back(std::move(day));
      at = midnight;
    }
    SpendShare last = share;
    last.part.start = at;
    out.push_back(std::move(last));
  }
  return out;
}

std::string ShownSpendKey(const std::string& key, SpendGrouping by) {
  if (!key.empty()) {
    return key;
  }
  return by == SpendGrouping::kJob ? "(no job)" : "(no one)";
}

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

std::vector<SpendShare> ShareSpend(const std::vector<SpendRecord>& stretches,
                                   const std::vector<JobRunRecord>& runs) {
  std::vector<SpendShare> shares;
  for (const SpendRecord& s : stretches) {
    if (!NodeState::Parse(s.state).IsBilled()) {
      continue;  // recorded to show time in a state, never billed
    }
    Clock::WallTime stretch_end = s.end.value_or(kOpen);
    // The runs of its node during it, and the times the set of them changes.
    std::vector<const JobRunRecord*> during;
    std::vector<Clock::WallTime> cuts = {s.start, stretch_end};
    for (const JobRunRecord& run : runs) {
      Clock::WallTime run_end = run.end.value_or(kOpen);
      if (run.fleet != s.fleet || run.node != s.node || run_end <= s.start ||
          run.start >= stretch_end) {
        continue;
      }
      during.push_back(&run);
      cuts.push_back(std::max(run.start, s.start));
      cuts.push_back(std::min(run_end, stretch_end));
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      std::vector<const JobRunRecord*> running;
      for (const JobRunRecord* run : during) {
        if (run->start <= cuts[i] && run->end.value_or(kOpen) >= cuts[i + 1]) {
          running.push_back(run);
        }
      }
      auto add = [&](const std::string& person, double fraction, const JobRunRecord* run) {
        SpendShare share{s, run ? run->name + " (" + run->id + ")" : "", fraction,
                         run ? run->id : "", run ? run->name : ""};
        share.part.start = cuts[i];
        share.part.end = cuts[i + 1] == kOpen ? std::nullopt : std::optional(cuts[i + 1]);
        share.part.usd_per_hour = s.usd_per_hour * fraction;
        share.part.owner = person;
        shares.push_back(std::move(share));
      };
      if (running.empty()) {
        add(s.owner, 1, nullptr);
      }
      for (const JobRunRecord* run : running) {
        add(run->person.empty() ? s.owner : run->person, 1.0 / static_cast<double>(running.size()),
            run);
      }
    }
  }
  return shares;
}

SpendReport ReportSpend(const std::vector<SpendShare>& shares, SpendGrouping by,
                        Clock::WallTime from, Clock::WallTime now) {
  SpendReport r;
  r.from = from;
  r.now = now;
  std::map<std::string, SpendLine> lines;
  std::vector<SpendRecord> parts;
  for (const SpendShare& share : SharesBy(shares, by, now)) {
    const SpendRecord& s = share.part;
    parts.push_back(s);
    std::string key = SpendKey(share, by);
    Clock::WallTime start = std::max(s.start, from);
    Clock::WallTime end = std::min(s.end.value_or(now), now);
    bool bills_now = !s.end && s.start <= now;
    if (end <= start && !bills_now) {
      continue;
    }
    SpendLine& line = lines[key];
    line.key = key;
    if (by == SpendGrouping::kJob) {
      line.job_id = share.job_id;
      line.job_name = share.job_name;
    }
    if (end > start) {
      line.node_hours += Hours(end - start) * share.fraction;
      line.usd += s.usd_per_hour * Hours(end - start);
      if (by == SpendGrouping::kDay) {
        line.usd_by_person[s.owner] += s.usd_per_hour * Hours(end - start);
      }
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
  if (by != SpendGrouping::kDay) {  // the map's order is the days'
    std::stable_sort(r.lines.begin(), r.lines.end(),
                     [](const SpendLine& a, const SpendLine& b) { return a.usd > b.usd; });
  }
  r.today_usd = SpendBetween(parts, UtcDayStart(now), now);
  r.month_usd = SpendBetween(parts, UtcMonthStart(now), now);
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
