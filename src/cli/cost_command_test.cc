// `tpufleet cost` over a real SQLite store in memory (a TestWorld lent to the CLI): the
// ledger's lines, the day's and month's forecasts and a fleet's budget left, as text, CSV
// and --json; and what a member and an admin see of it through a team server.
#include <gtest/gtest.h>

#include <tuple>

#include <nlohmann/json.hpp>

#include "cli/testing/lent_world.h"
#include "cli/testing/run_cli.h"
#include "control/testing/test_world.h"

namespace tpufleet::cli {
namespace {

using cli_testing::Contains;
using nlohmann::json;
using std::chrono::hours;

class CostCommandTest : public ::testing::Test {
 protected:
  // 18:00 UTC on 1 January 2026 (the fake clock's day): 6 h left in the day, 726 in the
  // month. ada's trainer runs at $10/h since 4 h ago; bo's eval ran 2 h at $4/h; ada's
  // node in fleet ops ran 1 h at $2/h. Fleet lab has usd_per_day 100; boss administers
  // it and ada is a member; nobody but the local user is on ops.
  void SetUp() override {
    t_.clock.Advance(hours(18));
    Clock::WallTime now = t_.clock.Now();
    Stretch("lab", "trainer", "ada", 10, now - hours(4), std::nullopt);
    Stretch("lab", "eval", "bo", 4, now - hours(3), now - hours(1));
    Stretch("ops", "x", "ada", 2, now - hours(2), now - hours(1));
    ASSERT_TRUE(t_.store->PutFleet({"lab", "boss", 100, std::nullopt, now}).ok());
    ASSERT_TRUE(t_.store->PutFleet({"ops", "zed", std::nullopt, 5, now}).ok());
    Row("ada", "member");
    Row("boss", "admin");
  }
  void Stretch(std::string fleet, std::string node, std::string owner, double usd_per_hour,
               Clock::WallTime start, std::optional<Clock::WallTime> end) {
    SpendRecord s;
    s.fleet = std::move(fleet);
    s.node = std::move(node);
    s.owner = std::move(owner);
    s.state = "READY";
    s.usd_per_hour = usd_per_hour;
    s.start = start;
    s.end = end;
    ASSERT_TRUE(t_.store->PutSpend(s).ok());
  }
  void Row(const std::string& name, const std::string& role) {
    UserRecord u;
    u.fleet = "lab";
    u.name = name;
    u.role = role;
    ASSERT_TRUE(t_.store->PutUser(u).ok());
  }
  cli_testing::Output As(const std::string& person, const std::vector<std::string>& argv) {
    return cli_testing::Served(app_, argv, {{"HOME", cli_testing::kNoHome}},
                               Access::Of(person, *t_.store->Users("")));
  }

  tpufleet::testing::TestWorld t_;
  int opened_ = 0;
  App app_ = cli_testing::AppLending(t_.world, &opened_);
};

TEST_F(CostCommandTest, ByPersonWithTheForecastsAndTheBudgetsLeft) {
  cli_testing::Output o = cli_testing::Tpufleet(app_, {"cost"});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out,
            "Spend since 2025-12-02T18:00:00Z (30d), by person, at list prices (spot at the most "
            "it can cost):\n"
            "PERSON  SPENT   NODE-HOURS  NOW\n"
            "ada     $42.00  5.0         $10.00/h\n"
            "bo      $8.00   2.0         -\n"
            "TOTAL   $50.00  7.0         $10.00/h\n"
            "\n"
            "Today (UTC): $50.00 spent; $110.00 by midnight UTC at $10.00/h.\n"
            "This month (UTC): $50.00 spent; $7,310.00 by 2026-02-01 at $10.00/h.\n"
            "Budget of lab: usd_per_day $100.00, $52.00 left today.\n"
            "Budget of ops: usd_total $5.00, $3.00 left.\n");
}

TEST_F(CostCommandTest, ByNodeAsJsonAndByFleetAsCsv) {
  cli_testing::Output o =
      cli_testing::Tpufleet(app_, {"cost", "--by", "node", "--since", "150m", "--json"});
  ASSERT_EQ(o.code, 0) << o.err;
  json j = json::parse(o.out);
  EXPECT_EQ(j["by"], "node");
  EXPECT_EQ(j["since"], "2026-01-01T15:30:00Z");
  ASSERT_EQ(j["lines"].size(), 3u);
  EXPECT_EQ(j["lines"][0]["node"], "lab/trainer");
  EXPECT_DOUBLE_EQ(j["lines"][0]["usd"].get<double>(), 25);  // 2.5 h of the span
  EXPECT_DOUBLE_EQ(j["lines"][0]["usd_per_hour"].get<double>(), 10);
  EXPECT_EQ(j["lines"][1]["node"], "lab/eval");
  EXPECT_DOUBLE_EQ(j["lines"][1]["usd"].get<double>(), 6);
  EXPECT_EQ(j["lines"][2]["node"], "ops/x");
  EXPECT_DOUBLE_EQ(j["usd"].get<double>(), 33);
  EXPECT_DOUBLE_EQ(j["forecast_day_usd"].get<double>(), 110);
  ASSERT_EQ(j["budgets"].size(), 2u);
  EXPECT_EQ(j["budgets"][0]["fleet"], "lab");
  EXPECT_DOUBLE_EQ(j["budgets"][0]["left_today_usd"].get<double>(), 52);
  EXPECT_TRUE(j["budgets"][0]["usd_total"].is_null());
  EXPECT_EQ(j["budgets"][0]["reached"], false);

  cli_testing::Output csv = cli_testing::Tpufleet(app_, {"cost", "--by", "fleet", "--csv"});
  ASSERT_EQ(csv.code, 0) << csv.err;
  EXPECT_EQ(csv.out,
            "fleet,usd,node_hours,usd_per_hour\n"
            "lab,48.00,6.000,10.00\n"
            "ops,2.00,1.000,0.00\n");
}

TEST_F(CostCommandTest, ThroughAServerAMemberSeesWhatIsBilledToThemAndAnAdminTheirFleet) {
  cli_testing::Output ada = As("ada", {"cost", "--json"});
  ASSERT_EQ(ada.code, 0) << ada.err;
  json a = json::parse(ada.out);
  // Not ops's hour, billed to ada too: she is not on ops.
  ASSERT_EQ(a["lines"].size(), 1u);
  EXPECT_EQ(a["lines"][0]["person"], "ada");
  EXPECT_DOUBLE_EQ(a["usd"].get<double>(), 40);
  EXPECT_TRUE(a["budgets"].empty());  // what is left would say what the fleet spent

  cli_testing::Output boss = As("boss", {"cost", "--by", "node"});
  ASSERT_EQ(boss.code, 0) << boss.err;
  EXPECT_TRUE(Contains(boss.out, "lab/trainer")) << boss.out;
  EXPECT_TRUE(Contains(boss.out, "lab/eval")) << boss.out;
  EXPECT_FALSE(Contains(boss.out, "ops")) << boss.out;
  EXPECT_TRUE(Contains(boss.out, "Budget of lab: usd_per_day $100.00, $52.00 left today."))
      << boss.out;

  EXPECT_TRUE(As("stranger", {"cost"}).out.find("Nothing billed.") != std::string::npos);
}

TEST_F(CostCommandTest, Issue17ByDayEachDaySaysWhoSpentIt) {
  json j = json::parse(cli_testing::Tpufleet(app_, {"cost", "--by", "day", "--json"}).out);
  ASSERT_EQ(j["lines"].size(), 1u);
  EXPECT_EQ(j["lines"][0]["day"], "2026-01-01");
  EXPECT_DOUBLE_EQ(j["lines"][0]["usd"].get<double>(), 50);
  EXPECT_EQ(j["lines"][0]["persons"],
            json::parse(R"([{"person": "ada", "usd": 42.0}, {"person": "bo", "usd": 8.0}])"));
  // Through a server, what the caller may see of it: boss administers lab, not ops.
  json boss = json::parse(As("boss", {"cost", "--by", "day", "--json"}).out);
  ASSERT_EQ(boss["lines"].size(), 1u);
  EXPECT_EQ(boss["lines"][0]["persons"],
            json::parse(R"([{"person": "ada", "usd": 40.0}, {"person": "bo", "usd": 8.0}])"));
  EXPECT_FALSE(
      json::parse(cli_testing::Tpufleet(app_, {"cost", "--json"}).out)["lines"][0].contains(
          "persons"))
      << "only days are split by person";
}

TEST_F(CostCommandTest, Issue17ByJobTheHoursAJobRanAreItsAndBilledToWhoRanIt) {
  // bo ran a job on ada's trainer for an hour, ending an hour ago; bo's sweep on eval
  // runs on (its run is open, the eval node's stretch ended).
  Clock::WallTime now = t_.clock.Now();
  ASSERT_TRUE(t_.store->PutJobRun({"lab", "trainer", "jabc1234", "probe", "bo", "bo",
                                   now - hours(2), now - hours(1)}).ok());
  ASSERT_TRUE(t_.store->PutJobRun({"lab", "eval", "jdef5678", "sweep", "bo", "bo",
                                   now - hours(3), std::nullopt}).ok());
  cli_testing::Output o = cli_testing::Tpufleet(app_, {"cost", "--by", "job"});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(Contains(o.out,
                       "JOB               SPENT   NODE-HOURS  NOW\n"
                       "(no job)          $32.00  4.0         $10.00/h\n"
                       "probe (jabc1234)  $10.00  1.0         -\n"
                       "sweep (jdef5678)  $8.00   2.0         -\n"
                       "TOTAL             $50.00  7.0         $10.00/h\n"))
      << o.out;

  // By person the job's hour moves from ada, who owns the node, to bo, who ran it.
  json j = json::parse(cli_testing::Tpufleet(app_, {"cost", "--json"}).out);
  ASSERT_EQ(j["lines"].size(), 2u);
  EXPECT_EQ(j["lines"][0]["person"], "ada");
  EXPECT_DOUBLE_EQ(j["lines"][0]["usd"].get<double>(), 32);
  EXPECT_EQ(j["lines"][1]["person"], "bo");
  EXPECT_DOUBLE_EQ(j["lines"][1]["usd"].get<double>(), 18);
  EXPECT_DOUBLE_EQ(j["usd"].get<double>(), 50);

  // Through the team server, bo as a member of lab sees his jobs' shares of its nodes;
  // the budget stays its admin's.
  Row("bo", "member");
  json bo = json::parse(As("bo", {"cost", "--by", "job", "--json"}).out);
  ASSERT_EQ(bo["lines"].size(), 2u);
  EXPECT_EQ(bo["lines"][0]["job"], "probe (jabc1234)");
  EXPECT_EQ(bo["lines"][0]["job_id"], "jabc1234");
  EXPECT_EQ(bo["lines"][0]["job_name"], "probe");
  EXPECT_EQ(bo["lines"][1]["job"], "sweep (jdef5678)");
  EXPECT_DOUBLE_EQ(bo["usd"].get<double>(), 18);
  EXPECT_TRUE(bo["budgets"].empty());
}

TEST_F(CostCommandTest, Issue17GoodputSplitsThePaidTimeAndSaysWhereMostWent) {
  // bo's probe kept trainer's TPUs busy for its hour; trainer was preempted 3 h ago and
  // back (nothing to resume) half an hour later; no other job ran anywhere.
  Clock::WallTime now = t_.clock.Now();
  ASSERT_TRUE(t_.store
                  ->PutJobRun({"lab", "trainer", "jabc1234", "probe", "bo", "bo", now - hours(2),
                               now - hours(1)})
                  .ok());
  ASSERT_TRUE(t_.store
                  ->AddUsage({"lab", "trainer", "jabc1234", now - hours(2), 3600, 3600, 0, 0,
                              now - hours(1)})
                  .ok());
  // The agents found every other hour of every node idle.
  for (auto [fleet, node, ago] : {std::tuple{"lab", "trainer", 4}, std::tuple{"lab", "trainer", 3},
                                  std::tuple{"lab", "trainer", 1}, std::tuple{"lab", "eval", 3},
                                  std::tuple{"lab", "eval", 2}, std::tuple{"ops", "x", 2}}) {
    ASSERT_TRUE(
        t_.store
            ->AddUsage({fleet, node, "", now - hours(ago), 3600, 0, 0, 3600, now - hours(ago - 1)})
            .ok());
  }
  ASSERT_TRUE(t_.store->AddEvent({0, now - hours(3), "lab", "trainer", "preempted", ""}).ok());
  ASSERT_TRUE(t_.store
                  ->AddEvent({0, now - hours(3) + std::chrono::minutes(30), "lab", "trainer",
                              "recovered", "seconds=1800"})
                  .ok());

  cli_testing::Output o = cli_testing::Tpufleet(app_, {"cost", "--by", "job", "--goodput"});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(Contains(o.out,
                       "JOB               SPENT   CHIP-HOURS  BUSY   PREEMPTED  IDLE  "
                       "INPUT-BOUND  OTHER  UNMEASURED\n"
                       "(no job)          $40.00  6.0         0 %    12 %       88 %  0 %          "
                       "0 %    0 %\n"
                       "probe (jabc1234)  $10.00  1.0         100 %  0 %        0 %   0 %          "
                       "0 %    0 %\n"
                       "TOTAL             $50.00  7.0         20 %   10 %       70 %  0 %          "
                       "0 %    0 %\n"))
      << o.out;
  json by_job =
      json::parse(cli_testing::Tpufleet(app_, {"cost", "--by", "job", "--goodput", "--json"}).out);
  ASSERT_EQ(by_job["lines"].size(), 2u);
  EXPECT_TRUE(by_job["lines"][0]["job_id"].is_null());  // (no job)
  EXPECT_EQ(by_job["lines"][1]["job_id"], "jabc1234");
  EXPECT_EQ(by_job["lines"][1]["job_name"], "probe");
  // Of $50: $5 preempted, $35 idle (every hour no job ran but the preemption's).
  EXPECT_TRUE(Contains(o.out, "\n70 % of the spend was idle TPUs, mostly where no job ran.\n"))
      << o.out;

  json j =
      json::parse(cli_testing::Tpufleet(app_, {"cost", "--by", "node", "--goodput", "--json"}).out);
  ASSERT_EQ(j["lines"].size(), 3u);
  EXPECT_EQ(j["lines"][0]["node"], "lab/trainer");
  EXPECT_DOUBLE_EQ(j["lines"][0]["hours"]["busy"].get<double>(), 1);
  EXPECT_DOUBLE_EQ(j["lines"][0]["hours"]["preempted"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["lines"][0]["usd_split"]["idle"].get<double>(), 25);
  EXPECT_DOUBLE_EQ(j["usd"].get<double>(), 50);
  EXPECT_TRUE(j["measured"].get<bool>());
  EXPECT_EQ(j["verdict"], "70 % of the spend was idle TPUs, mostly on node lab/trainer.");

  cli_testing::Output csv = cli_testing::Tpufleet(app_, {"cost", "--goodput", "--csv"});
  EXPECT_TRUE(Contains(csv.out,
                       "person,usd,node_hours,chip_hours,busy_hours,preempted_hours,"
                       "idle_hours,input_bound_hours,other_hours,unmeasured_hours\n"
                       "ada,32.00,4.000,4.000,0.000,0.500,3.500,0.000,0.000,0.000\n"))
      << csv.out;

  // By day: each day's line is that day's part, and the days add up to the whole (the
  // 4 hours may cross midnight UTC).
  json days =
      json::parse(cli_testing::Tpufleet(app_, {"cost", "--by", "day", "--goodput", "--json"}).out);
  ASSERT_FALSE(days["lines"].empty()) << days.dump();
  double usd = 0, busy = 0, preempted = 0, idle = 0;
  for (const json& line : days["lines"]) {
    EXPECT_EQ(line["day"].get<std::string>().size(), 10u) << line.dump();  // YYYY-MM-DD
    usd += line["usd"].get<double>();
    busy += line["hours"]["busy"].get<double>();
    preempted += line["hours"]["preempted"].get<double>();
    idle += line["hours"]["idle"].get<double>();
  }
  EXPECT_DOUBLE_EQ(usd, 50);
  EXPECT_DOUBLE_EQ(busy, 1);
  EXPECT_DOUBLE_EQ(preempted, 0.5);
  EXPECT_DOUBLE_EQ(idle, j["hours"]["idle"].get<double>());  // the whole, by node
  EXPECT_GT(idle, 0);

  // bo, a member, sees what is billed to him: his job, and eval's idle hours.
  Row("bo", "member");
  json bo = json::parse(As("bo", {"cost", "--by", "job", "--goodput", "--json"}).out);
  ASSERT_EQ(bo["lines"].size(), 2u);
  EXPECT_EQ(bo["verdict"],
            "56 % of the spend was busy TPUs, mostly on job probe (jabc1234); the largest "
            "loss: 44 % of the spend was idle TPUs, mostly where no job ran.");
}

TEST_F(CostCommandTest, BadFlagsSayWhatWasExpectedAndChangeNothing) {
  cli_testing::Output by = cli_testing::Tpufleet(app_, {"cost", "--by", "persons"});
  EXPECT_EQ(by.code, 2);
  EXPECT_EQ(by.err,
            "tpufleet: --by: \"persons\" is not one of fleet, node, person, job, day (did you "
            "mean person?)\n");
  EXPECT_EQ(cli_testing::Tpufleet(app_, {"cost", "--since", "soon"}).code, 2);
  EXPECT_EQ(cli_testing::Tpufleet(app_, {"cost", "--since", "2027-01-01T00:00:00Z"}).code, 2);
  EXPECT_EQ(cli_testing::Tpufleet(app_, {"cost", "--csv", "--json"}).code, 2);
  EXPECT_EQ(cli_testing::Tpufleet(app_, {"cost", "lab"}).code, 2);
}

}  // namespace
}  // namespace tpufleet::cli
