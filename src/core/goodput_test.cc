#include "core/goodput.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/testing/catalog_fixtures.h"
#include "core/testing/spend_fixtures.h"

namespace tpufleet {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

// 18:00 UTC on 30 November 2026, on the hour.
const Clock::WallTime kGoodputNow =
    std::chrono::sys_days{std::chrono::year{2026} / 11 / 30} + std::chrono::hours(18);

SpendRecord NodeStretch(std::string node, std::string type, std::string owner, std::string state,
                        double usd_per_hour, Clock::WallTime start,
                        std::optional<Clock::WallTime> end) {
  return testing::LedgerStretch("lab", std::move(node), std::move(type), std::move(owner),
                                std::move(state), usd_per_hour, start, end);
}

// ada's spot pod (16 chips, $16/h) ran milo's job j1 for the last 4 h: preempted 2 h ago,
// back and its job resumed an hour later (the husk billed half an hour of it). bo's
// eval node (4 chips, $4/h) has run no job for 3 h.
struct Fleet {
  std::vector<SpendShare> shares;
  std::vector<UsageRecord> usage;
  std::vector<PreemptionGap> gaps;
};

Fleet PreemptedPodAndIdleNode() {
  const Clock::WallTime t = kGoodputNow;
  std::vector<SpendRecord> ledger = {
      NodeStretch("pod", "v5litepod-16", "ada", "READY", 16, t - hours(4), t - hours(2)),
      NodeStretch("pod", "v5litepod-16", "ada", "PREEMPTED", 16, t - hours(2), t - minutes(90)),
      NodeStretch("pod", "v5litepod-16", "ada", "CREATING", 16, t - minutes(90), t - hours(1)),
      NodeStretch("pod", "v5litepod-16", "ada", "READY", 16, t - hours(1), std::nullopt),
      NodeStretch("eval", "v5litepod-4", "bo", "READY", 4, t - hours(3), std::nullopt),
  };
  std::vector<JobRunRecord> runs = {
      {"lab", "pod", "j1", "train", "milo", "", t - hours(4), std::nullopt}};
  Fleet f;
  f.shares = ShareSpend(ledger, runs);
  // The agents: the pod busy 75 % and starved 10 % in its first hour, busy the second,
  // half busy and half starved since it came back; eval idle throughout.
  f.usage = {
      {"lab", "pod", "j1", t - hours(4), 3600, 2700, 360, 0, t - hours(3)},
      {"lab", "pod", "j1", t - hours(3), 3600, 3600, 0, 0, t - hours(2)},
      {"lab", "eval", "", t - hours(3), 3600, 0, 0, 3600, t - hours(2)},
      {"lab", "eval", "", t - hours(2), 3600, 0, 0, 3600, t - hours(1)},
      {"lab", "eval", "", t - hours(1), 3600, 0, 0, 3600, t},
      {"lab", "pod", "j1", t - hours(1), 3600, 1800, 1800, 0, t},
  };
  f.gaps = {{"lab", "pod", t - hours(2), t - hours(1)}};
  return f;
}

GoodputReport Report(const Fleet& f, SpendGrouping by, Clock::WallTime from) {
  return ReportGoodput(f.shares, f.usage, f.gaps, testing::BuiltinCatalog(), by, from, kGoodputNow);
}

TEST(GoodputTest, Issue17SplitsAJobsPaidTimeIntoBusyPreemptedInputBoundAndOther) {
  GoodputReport r = Report(PreemptedPodAndIdleNode(), SpendGrouping::kJob, kGoodputNow - hours(24));

  ASSERT_EQ(r.lines.size(), 2u);
  const GoodputLine& train = r.lines[0];
  EXPECT_EQ(train.key, "train (j1)");
  EXPECT_DOUBLE_EQ(train.usd, 64);
  EXPECT_DOUBLE_EQ(train.node_hours, 4);
  EXPECT_DOUBLE_EQ(train.chip_hours, 64);
  EXPECT_DOUBLE_EQ(train.hours.preempted, 1);  // the notice to the job resumed
  EXPECT_DOUBLE_EQ(train.hours.busy, 0.75 + 1 + 0.5);
  EXPECT_DOUBLE_EQ(train.hours.input_bound, 0.1 + 0.5);
  EXPECT_DOUBLE_EQ(train.hours.idle, 0);
  EXPECT_NEAR(train.hours.other, 0.15, 1e-9);
  EXPECT_DOUBLE_EQ(train.hours.unmeasured, 0);
  EXPECT_NEAR(train.hours.Sum(), train.node_hours, 1e-9);
  EXPECT_DOUBLE_EQ(train.usd_split.preempted, 16);
  EXPECT_NEAR(train.usd_split.Sum(), train.usd, 1e-9);

  const GoodputLine& none = r.lines[1];
  EXPECT_EQ(none.key, "");  // eval: no job ran, so what was not busy was idle
  EXPECT_DOUBLE_EQ(none.usd, 12);
  EXPECT_DOUBLE_EQ(none.chip_hours, 12);
  EXPECT_DOUBLE_EQ(none.hours.idle, 3);
  EXPECT_DOUBLE_EQ(r.total.usd, 76);
  EXPECT_NEAR(r.total.usd_split.Sum(), 76, 1e-9);
}

TEST(GoodputTest, Issue17ByPersonTheJobsTimeIsItsRunnersAndTheVerdictSaysWhereMostWent) {
  GoodputReport r =
      Report(PreemptedPodAndIdleNode(), SpendGrouping::kPerson, kGoodputNow - hours(24));
  ASSERT_EQ(r.lines.size(), 2u);
  EXPECT_EQ(r.lines[0].key, "milo");
  EXPECT_EQ(r.lines[1].key, "bo");
  EXPECT_DOUBLE_EQ(r.lines[1].usd_split.idle, 12);
  // $36 of $76 busy; of the losses, preemption's $16 is the largest.
  EXPECT_EQ(r.verdict,
            "47 % of the spend was busy TPUs, mostly on person milo; the largest loss: 21 % of "
            "the spend was lost to preemption, mostly on person milo.");

  GoodputReport by_node =
      Report(PreemptedPodAndIdleNode(), SpendGrouping::kNode, kGoodputNow - hours(24));
  EXPECT_EQ(by_node.lines[0].key, "lab/pod");
}

TEST(GoodputTest, Issue17ANodeThatRanNoJobIsAllIdle) {
  Fleet f = PreemptedPodAndIdleNode();
  f.gaps.clear();
  f.shares.erase(std::remove_if(f.shares.begin(), f.shares.end(),
                                [](const SpendShare& s) { return s.part.node == "pod"; }),
                 f.shares.end());
  GoodputReport r = Report(f, SpendGrouping::kNode, kGoodputNow - hours(24));
  EXPECT_EQ(r.verdict, "100 % of the spend was idle TPUs.");  // one line: no "mostly"
}

TEST(GoodputTest, Issue17ASpanCutsTheSharesAndTheirUsage) {
  // The last hour only: the pod back and its job half busy, half starved.
  GoodputReport r = Report(PreemptedPodAndIdleNode(), SpendGrouping::kNode, kGoodputNow - hours(1));
  ASSERT_EQ(r.lines.size(), 2u);
  EXPECT_EQ(r.lines[0].key, "lab/pod");
  EXPECT_DOUBLE_EQ(r.lines[0].node_hours, 1);
  EXPECT_DOUBLE_EQ(r.lines[0].hours.preempted, 0);
  EXPECT_DOUBLE_EQ(r.lines[0].hours.busy, 0.5);
  EXPECT_DOUBLE_EQ(r.lines[0].hours.input_bound, 0.5);

  // Half an hour into the pod's first hour: half of that hour's measures.
  r = Report(PreemptedPodAndIdleNode(), SpendGrouping::kNode, kGoodputNow - minutes(210));
  EXPECT_DOUBLE_EQ(r.lines[0].node_hours, 3.5);
  EXPECT_DOUBLE_EQ(r.lines[0].hours.busy, 0.375 + 1 + 0.5);
}

TEST(GoodputTest, Issue17UsageCountsToTheJobItMeasuredWhenTwoShareANode) {
  const Clock::WallTime t = kGoodputNow;
  std::vector<SpendRecord> ledger = {
      NodeStretch("n", "v5litepod-4", "ada", "READY", 4, t - hours(1), t)};
  // a for the whole hour, b for its second half.
  std::vector<JobRunRecord> runs = {{"lab", "n", "a", "a", "", "", t - hours(1), std::nullopt},
                                    {"lab", "n", "b", "b", "", "", t - minutes(30), std::nullopt}};
  std::vector<UsageRecord> usage = {{"lab", "n", "a", t - hours(1), 3600, 1800, 0, 0, t}};
  GoodputReport r = ReportGoodput(ShareSpend(ledger, runs), usage, {}, testing::BuiltinCatalog(),
                                  SpendGrouping::kJob, t - hours(1), t);
  ASSERT_EQ(r.lines.size(), 2u);
  EXPECT_EQ(r.lines[0].key, "a (a)");
  EXPECT_DOUBLE_EQ(r.lines[0].node_hours, 0.75);  // all of the first half, half the second
  // The node's hour measured 50 % busy while a held the chips: half of a's time.
  EXPECT_DOUBLE_EQ(r.lines[0].hours.busy, 0.375);
  EXPECT_DOUBLE_EQ(r.lines[0].hours.other, 0.375);
  EXPECT_EQ(r.lines[1].key, "b (b)");  // no agent measured it
  EXPECT_DOUBLE_EQ(r.lines[1].hours.busy, 0);
  EXPECT_DOUBLE_EQ(r.lines[1].hours.other, 0);
  EXPECT_DOUBLE_EQ(r.lines[1].hours.unmeasured, 0.25);
}

// A row stays its job's when the span or the caller's view leaves the job's share out:
// the rest of the node's time is not made busy by it.
TEST(GoodputTest, Issue17ARowStaysItsJobsWhenTheSpanOrTheViewLeavesItOut) {
  const Clock::WallTime t = kGoodputNow;
  std::vector<SpendRecord> ledger = {
      NodeStretch("n", "v5litepod-4", "ada", "READY", 4, t - hours(1), t)};
  std::vector<JobRunRecord> runs = {
      {"lab", "n", "j", "j", "bo", "", t - hours(1), t - minutes(30)}};
  std::vector<UsageRecord> usage = {{"lab", "n", "j", t - hours(1), 1800, 1800, 0, 0, t}};
  std::vector<SpendShare> shares = ShareSpend(ledger, runs);
  GoodputReport r = ReportGoodput(shares, usage, {}, testing::BuiltinCatalog(), SpendGrouping::kJob,
                                  t - minutes(30), t);
  ASSERT_EQ(r.lines.size(), 1u);
  EXPECT_EQ(r.lines[0].key, "");
  EXPECT_DOUBLE_EQ(r.lines[0].hours.busy, 0);
  EXPECT_DOUBLE_EQ(r.lines[0].hours.unmeasured, 0.5);

  // ada sees the node's time no job ran, not bo's job.
  r = ReportGoodput(shares, usage, {}, testing::BuiltinCatalog(), SpendGrouping::kPerson,
                    t - hours(1), t, [](const SpendShare& s) { return s.part.owner == "ada"; });
  ASSERT_EQ(r.lines.size(), 1u);
  EXPECT_EQ(r.lines[0].key, "ada");
  EXPECT_DOUBLE_EQ(r.lines[0].hours.busy, 0);

  // Reserved capacity costs nothing: its verdict weighs node-hours.
  ledger[0].usd_per_hour = 0;
  r = ReportGoodput(ShareSpend(ledger, runs), usage, {}, testing::BuiltinCatalog(),
                    SpendGrouping::kJob, t - hours(1), t);
  EXPECT_EQ(r.verdict,
            "50 % of the node-hours were busy TPUs, mostly on job j (j); the largest loss: 50 % "
            "of the node-hours were unmeasured (no agent answered, or since serve's last "
            "metrics round), mostly where no job ran.");
}

TEST(GoodputTest, Issue17MeasureUsageAveragesTheAnsweringWorkersAndCutsAtTheHour) {
  const Clock::WallTime now = kGoodputNow + seconds(30);
  WindowSummary busy;
  busy.duty_cycle_percent = 80;
  busy.input_bound_fraction = 0.1;
  busy.job = "j1";
  WindowSummary idle;  // no TPU figures, nothing used it for the last 45 s
  idle.idle_since_unix_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>((now - seconds(45)).time_since_epoch())
          .count();
  std::vector<UsageRecord> rows =
      MeasureUsage("lab", "pod", {busy, idle, std::nullopt}, now - seconds(90), now);

  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].hour, kGoodputNow - hours(1));
  EXPECT_EQ(rows[0].job, "j1");
  EXPECT_DOUBLE_EQ(rows[0].seconds, 60);
  EXPECT_DOUBLE_EQ(rows[0].busy_seconds, 60 * 0.4);
  EXPECT_DOUBLE_EQ(rows[0].input_bound_seconds, 60 * 0.05);
  EXPECT_DOUBLE_EQ(rows[0].idle_seconds, 60 * 0.25);
  EXPECT_EQ(rows[0].measured_until, kGoodputNow);
  EXPECT_EQ(rows[1].hour, kGoodputNow);
  EXPECT_DOUBLE_EQ(rows[1].seconds, 30);
  EXPECT_DOUBLE_EQ(rows[1].busy_seconds, 12);
  EXPECT_EQ(rows[1].measured_until, now);

  EXPECT_TRUE(MeasureUsage("lab", "pod", {std::nullopt}, now - seconds(30), now).empty());
  EXPECT_TRUE(MeasureUsage("lab", "pod", {busy}, now, now).empty());
}

}  // namespace
}  // namespace tpufleet
