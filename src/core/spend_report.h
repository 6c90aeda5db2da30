// What `tpufleet cost` shows: the ledger's stretches (core/node_record.h SpendRecord)
// shared among the jobs that ran on their nodes (JobRunRecord), added up per fleet, node,
// person or job over a span, what they cost per hour now, and where the day and the
// month end at that rate. Priced by core/ledger.h's rules: only billable states count,
// each stretch at the price it opened with, an open stretch up to `now`. Days and months
// are UTC, as the budgets' are.
//
// Thread-safety: pure functions over values.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/node_record.h"
#include "util/clock.h"
#include "util/status.h"

namespace tpufleet {

/// What a report's lines are: a UTC day's are that day's spend ("2026-11-27").
enum class SpendGrouping { kFleet, kNode, kPerson, kJob, kDay };

/// "fleet" | "node" | "person" | "job" | "day".
std::string_view SpendGroupingName(SpendGrouping by);
/// The grouping a word names; InvalidArgument listing the words for anything else.
Result<SpendGrouping> ParseSpendGrouping(std::string_view word);

/// A part of one billed stretch: its node's time while the same jobs ran (or none did),
/// the share of it one job had, billed to one person. A stretch's shares add up to it:
/// while k jobs run on the node each has 1/k of its rate; while none runs the whole rate
/// is the fleet owner's.
struct SpendShare {
  /// The stretch cut to the share: `start` and `end` the part's, `usd_per_hour` the
  /// share of the rate, `owner` the person billed (the job's person, else the
  /// stretch's owner).
  SpendRecord part;
  std::string job;      // "name (id)" of the job it is the share of; "" while no job ran
  double fraction = 1;  // of the node's time: 1/k while k jobs ran
  std::string job_id{};    // the job's id; "" while no job ran
  std::string job_name{};  // its name
};

/// The key of the report line `share` counts to (SpendLine::key); by day, the UTC day
/// its part starts on.
std::string SpendKey(const SpendShare& share, SpendGrouping by);
/// The shares as a report by `by` counts them: by day, each cut at UTC midnights (a
/// part open at `now` stays open); else as they are.
std::vector<SpendShare> SharesBy(const std::vector<SpendShare>& shares, SpendGrouping by,
                                 Clock::WallTime now);
/// A line's key as shown: "" is "(no job)" by job (the time no job ran) and "(no one)"
/// by person (stretches opened before the ledger kept owners).
std::string ShownSpendKey(const std::string& key, SpendGrouping by);

/// The shares of `stretches` among `runs` (any fleets and nodes; a run counts on the
/// stretches of its own fleet and node only). Unbilled stretches have none.
std::vector<SpendShare> ShareSpend(const std::vector<SpendRecord>& stretches,
                                   const std::vector<JobRunRecord>& runs);

/// One line of a report: a fleet, a node ("fleet/node"), a person, a job or a day.
struct SpendLine {
  /// The fleet, "fleet/node", the person billed ("" for stretches opened before the
  /// ledger kept owners), the job ("name (id)"; "" for the time no job ran) or the UTC
  /// day ("2026-11-27").
  std::string key;
  std::string job_id{}, job_name{};  // by job: the job's id and name ("" for no job)
  double usd = 0;           // spent within the span
  double node_hours = 0;    // billable node-hours within the span (a job's share of them)
  double usd_per_hour = 0;  // what its open billable stretches cost per hour at `now`
  /// By day: the day's `usd` per person billed ("" as `key` by person), adding up to it.
  std::map<std::string, double> usd_by_person{};
};

struct SpendReport {
  Clock::WallTime from{}, now{};
  std::vector<SpendLine> lines;  // most spent first, then by key; by day, oldest first
  double usd = 0;                // the lines' sum
  double usd_per_hour = 0;       // the current rate, every line's
  double today_usd = 0;          // since 00:00 UTC of `now`'s day (whatever `from` is)
  double month_usd = 0;          // since the 1st of `now`'s month, 00:00 UTC
  /// Where today and this month end if the current rate holds until then.
  double forecast_day_usd = 0;
  double forecast_month_usd = 0;
};

/// The report of `shares` within [from, now), one line per key of `by` that spent
/// something or bills now. Shares of every fleet given count: the caller picks them.
/// REQUIRES: from <= now.
SpendReport ReportSpend(const std::vector<SpendShare>& shares, SpendGrouping by,
                        Clock::WallTime from, Clock::WallTime now);

/// 00:00 UTC of the 1st of the month `t` falls in, and of the next month.
Clock::WallTime UtcMonthStart(Clock::WallTime t);
Clock::WallTime UtcNextMonthStart(Clock::WallTime t);

}  // namespace tpufleet
