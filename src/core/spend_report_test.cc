#include "core/spend_report.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/testing/spend_fixtures.h"

namespace tpufleet {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

// 18:00 UTC on 30 November 2026: 6 hours left in the day and in the month.
const Clock::WallTime kReportNow =
    std::chrono::sys_days{std::chrono::year{2026} / 11 / 30} + std::chrono::hours(18);

SpendRecord Stretch(std::string node, std::string owner, std::string state, double usd_per_hour,
                    Clock::WallTime start, std::optional<Clock::WallTime> end) {
  std::string fleet = node == "other" ? "ops" : "lab";
  return testing::LedgerStretch(std::move(fleet), std::move(node), "", std::move(owner),
                                std::move(state), usd_per_hour, start, end);
}

// ada's trainer ran 2 h at $10/h, was preempted (the husk bills 1 h more) and runs
// again since an hour ago; bo's eval runs at $4/h since 3 h ago; a queued resource of
// bo's waited 5 h (not billed); ops's node of no one's ran 1 h at $2/h yesterday.
std::vector<SpendRecord> Ledger() {
  return {
      Stretch("trainer", "ada", "READY", 10, kReportNow - hours(4), kReportNow - hours(2)),
      Stretch("trainer", "ada", "PREEMPTED", 10, kReportNow - hours(2), kReportNow - hours(1)),
      Stretch("trainer", "ada", "READY", 10, kReportNow - hours(1), std::nullopt),
      Stretch("eval", "bo", "READY", 4, kReportNow - hours(3), std::nullopt),
      Stretch("queued", "bo", "WAITING_FOR_RESOURCES", 4, kReportNow - hours(5), std::nullopt),
      Stretch("other", "", "READY", 2, kReportNow - hours(25), kReportNow - hours(24)),
  };
}

TEST(SpendReportTest, ByPersonAddsUpToTheLedgerAndForecastsAtTheCurrentRate) {
  SpendReport r = ReportSpend(ShareSpend(Ledger(), {}), SpendGrouping::kPerson,
                              kReportNow - hours(48), kReportNow);
  ASSERT_EQ(r.lines.size(), 3u);  // the waiting queued resource is no line of its own
  EXPECT_EQ(r.lines[0].key, "ada");
  EXPECT_DOUBLE_EQ(r.lines[0].usd, 40);  // 4 node-hours at $10
  EXPECT_DOUBLE_EQ(r.lines[0].node_hours, 4);
  EXPECT_DOUBLE_EQ(r.lines[0].usd_per_hour, 10);
  EXPECT_EQ(r.lines[1].key, "bo");
  EXPECT_DOUBLE_EQ(r.lines[1].usd, 12);
  EXPECT_DOUBLE_EQ(r.lines[1].usd_per_hour, 4);
  EXPECT_EQ(r.lines[2].key, "");  // before owners were kept
  EXPECT_DOUBLE_EQ(r.lines[2].usd, 2);
  EXPECT_DOUBLE_EQ(r.lines[2].usd_per_hour, 0);
  EXPECT_DOUBLE_EQ(r.usd, 54);
  EXPECT_DOUBLE_EQ(r.usd_per_hour, 14);
  // Today (UTC) holds everything but ops's hour of yesterday: 52; 6 h left at $14/h.
  EXPECT_DOUBLE_EQ(r.today_usd, 52);
  EXPECT_DOUBLE_EQ(r.forecast_day_usd, 52 + 6 * 14);
  // The month, which ends with the day here, holds all 54.
  EXPECT_DOUBLE_EQ(r.month_usd, 54);
  EXPECT_DOUBLE_EQ(r.forecast_month_usd, 54 + 6 * 14);
}

TEST(SpendReportTest, TheSpanCutsStretchesAndOnlyOpenOnesSetTheRate) {
  // The last 90 minutes: half an hour of the husk and the trainer's hour since; 90
  // minutes of eval.
  SpendReport r = ReportSpend(ShareSpend(Ledger(), {}), SpendGrouping::kNode,
                              kReportNow - minutes(90), kReportNow);
  ASSERT_EQ(r.lines.size(), 2u);
  EXPECT_EQ(r.lines[0].key, "lab/trainer");
  EXPECT_DOUBLE_EQ(r.lines[0].usd, 15);
  EXPECT_DOUBLE_EQ(r.lines[0].node_hours, 1.5);
  EXPECT_EQ(r.lines[1].key, "lab/eval");
  EXPECT_DOUBLE_EQ(r.lines[1].usd, 6);
  EXPECT_DOUBLE_EQ(r.usd, 21);
  // Whatever the span, today's and the month's figures are the whole day's and month's.
  EXPECT_DOUBLE_EQ(r.today_usd, 52);
}

TEST(SpendReportTest, ByFleetAndAFleetWithNothingSpentIsNoLine) {
  SpendReport r = ReportSpend(ShareSpend(Ledger(), {}), SpendGrouping::kFleet,
                              kReportNow - hours(12), kReportNow);
  ASSERT_EQ(r.lines.size(), 1u);  // ops spent yesterday only
  EXPECT_EQ(r.lines[0].key, "lab");
  EXPECT_DOUBLE_EQ(r.lines[0].usd, 52);
  EXPECT_TRUE(
      ReportSpend({}, SpendGrouping::kFleet, kReportNow - hours(1), kReportNow).lines.empty());
}

// On Ledger(): cy's train (restarted after the preemption under its id) has run on
// trainer since before it started; bo's probe shared trainer for 15 minutes half an hour
// ago; bo's sweep ran on eval for an hour. A run on a node of another fleet never counts.
std::vector<JobRunRecord> Runs() {
  return {
      {"lab", "trainer", "j1", "train", "cy", "cy", kReportNow - hours(5), std::nullopt},
      {"lab", "trainer", "j2", "probe", "bo", "bo", kReportNow - minutes(30),
       kReportNow - minutes(15)},
      {"lab", "eval", "j3", "sweep", "bo", "bo", kReportNow - hours(2), kReportNow - hours(1)},
      {"ops", "trainer", "j4", "stray", "dee", "dee", kReportNow - hours(30), std::nullopt},
  };
}

TEST(SpendReportTest, Issue17ByJobSharesANodesHoursAmongTheJobsThatRanOnIt) {
  SpendReport r = ReportSpend(ShareSpend(Ledger(), Runs()), SpendGrouping::kJob,
                              kReportNow - hours(48), kReportNow);
  ASSERT_EQ(r.lines.size(), 4u);
  // train: trainer's 2 h, the husk's hour, and its last hour but half of 15 minutes.
  EXPECT_EQ(r.lines[0].key, "train (j1)");
  EXPECT_DOUBLE_EQ(r.lines[0].usd, 20 + 10 + 7.5 + 1.25);
  EXPECT_DOUBLE_EQ(r.lines[0].node_hours, 2 + 1 + 0.75 + 0.125);
  EXPECT_DOUBLE_EQ(r.lines[0].usd_per_hour, 10);
  // The time no job ran: eval's 2 h outside the sweep, ops's hour of yesterday.
  EXPECT_EQ(r.lines[1].key, "");
  EXPECT_DOUBLE_EQ(r.lines[1].usd, 8 + 2);
  EXPECT_DOUBLE_EQ(r.lines[1].usd_per_hour, 4);
  EXPECT_EQ(r.lines[2].key, "sweep (j3)");
  EXPECT_DOUBLE_EQ(r.lines[2].usd, 4);
  EXPECT_DOUBLE_EQ(r.lines[2].usd_per_hour, 0);
  EXPECT_EQ(r.lines[3].key, "probe (j2)");
  EXPECT_DOUBLE_EQ(r.lines[3].usd, 1.25);
  EXPECT_DOUBLE_EQ(r.lines[3].node_hours, 0.125);
  // Shared out, the ledger adds up to what it did unshared.
  EXPECT_DOUBLE_EQ(r.usd, 54);
  EXPECT_DOUBLE_EQ(r.usd_per_hour, 14);
  EXPECT_DOUBLE_EQ(r.today_usd, 52);
}

TEST(SpendReportTest, Issue17AJobsHoursAreBilledToWhoRanItTheRestToTheOwner) {
  SpendReport r = ReportSpend(ShareSpend(Ledger(), Runs()), SpendGrouping::kPerson,
                              kReportNow - hours(48), kReportNow);
  ASSERT_EQ(r.lines.size(), 3u);  // ada owns trainer, but cy's job had all of its time
  EXPECT_EQ(r.lines[0].key, "cy");
  EXPECT_DOUBLE_EQ(r.lines[0].usd, 38.75);
  EXPECT_EQ(r.lines[1].key, "bo");
  EXPECT_DOUBLE_EQ(r.lines[1].usd, 1.25 + 4 + 8);
  EXPECT_EQ(r.lines[2].key, "");
  EXPECT_DOUBLE_EQ(r.lines[2].usd, 2);
  EXPECT_DOUBLE_EQ(r.usd, 54);

  // An unbilled stretch has no shares; a billed one cut by runs has one per part.
  std::vector<SpendShare> shares = ShareSpend({Ledger()[4], Ledger()[2]}, Runs());
  ASSERT_EQ(shares.size(), 4u);  // train alone, train and probe, train alone
  EXPECT_EQ(shares[0].part.start, kReportNow - hours(1));
  EXPECT_EQ(shares[0].part.end, kReportNow - minutes(30));
  EXPECT_DOUBLE_EQ(shares[1].fraction, 0.5);
  EXPECT_DOUBLE_EQ(shares[2].part.usd_per_hour, 5);
  EXPECT_EQ(shares[2].part.owner, "bo");
  EXPECT_FALSE(shares[3].part.end.has_value());
  EXPECT_EQ(shares[3].job, "train (j1)");

  // A run of the local user or the server's operator (no person) is billed as its node.
  std::vector<JobRunRecord> local = Runs();
  local[0].person = "";
  shares = ShareSpend({Ledger()[2]}, local);
  ASSERT_EQ(shares.size(), 4u);  // as above: train, train and probe, train
  EXPECT_EQ(shares[0].part.owner, "ada");
  EXPECT_EQ(shares[0].job, "train (j1)");
  EXPECT_EQ(shares[1].part.owner, "ada");
  EXPECT_EQ(shares[2].part.owner, "bo");
  EXPECT_EQ(shares[3].part.owner, "ada");
}

TEST(SpendReportTest, MonthsAndGroupingWords) {
  Clock::WallTime jan31 = std::chrono::sys_days{std::chrono::year{2027} / 1 / 31} + hours(7);
  EXPECT_EQ(UtcMonthStart(jan31), std::chrono::sys_days{std::chrono::year{2027} / 1 / 1});
  EXPECT_EQ(UtcNextMonthStart(jan31), std::chrono::sys_days{std::chrono::year{2027} / 2 / 1});
  EXPECT_EQ(UtcNextMonthStart(kReportNow), std::chrono::sys_days{std::chrono::year{2026} / 12 / 1});
  EXPECT_EQ(*ParseSpendGrouping("person"), SpendGrouping::kPerson);
  EXPECT_EQ(SpendGroupingName(SpendGrouping::kNode), "node");
  Result<SpendGrouping> bad = ParseSpendGrouping("persons");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "\"persons\" is not one of fleet, node, person, job, day (did you mean person?)");
  EXPECT_EQ(*ParseSpendGrouping("job"), SpendGrouping::kJob);
  EXPECT_EQ(*ParseSpendGrouping("day"), SpendGrouping::kDay);
}

TEST(SpendReportTest, Issue17ByDayCutsStretchesAtUtcMidnightOldestFirst) {
  SpendReport r = ReportSpend(ShareSpend(Ledger(), {}), SpendGrouping::kDay, kReportNow - hours(48),
                              kReportNow);
  // ops's hour was yesterday (17:00 to 18:00); today, trainer's 4 h and eval's 3 h.
  ASSERT_EQ(r.lines.size(), 2u);
  EXPECT_EQ(r.lines[0].key, "2026-11-29");
  EXPECT_DOUBLE_EQ(r.lines[0].usd, 2);
  EXPECT_EQ(r.lines[1].key, "2026-11-30");
  EXPECT_DOUBLE_EQ(r.lines[1].usd, 52);
  EXPECT_DOUBLE_EQ(r.lines[1].usd_per_hour, 14);
  // Each day's spend per person billed, adding up to the day's.
  EXPECT_EQ(r.lines[0].usd_by_person, (std::map<std::string, double>{{"", 2}}));
  EXPECT_EQ(r.lines[1].usd_by_person, (std::map<std::string, double>{{"ada", 40}, {"bo", 12}}));
  EXPECT_TRUE(ReportSpend(ShareSpend(Ledger(), {}), SpendGrouping::kPerson, kReportNow - hours(48),
                          kReportNow)
                  .lines[0]
                  .usd_by_person.empty())
      << "only days are split";

  // A stretch over midnight, open now: a part per day, the last still open.
  std::vector<SpendRecord> ledger = {
      Stretch("eval", "bo", "READY", 2, kReportNow - hours(30), std::nullopt)};
  std::vector<SpendShare> days = SharesBy(ShareSpend(ledger, {}), SpendGrouping::kDay, kReportNow);
  ASSERT_EQ(days.size(), 2u);
  EXPECT_EQ(days[0].part.end, kReportNow - hours(18));
  EXPECT_FALSE(days[1].part.end.has_value());
  r = ReportSpend(ShareSpend(ledger, {}), SpendGrouping::kDay, kReportNow - hours(48), kReportNow);
  ASSERT_EQ(r.lines.size(), 2u);
  EXPECT_DOUBLE_EQ(r.lines[0].usd, 24);  // 12 h at $2 on the 29th
  EXPECT_DOUBLE_EQ(r.lines[1].usd, 36);
  EXPECT_DOUBLE_EQ(r.usd, 60);
}

}  // namespace
}  // namespace tpufleet
