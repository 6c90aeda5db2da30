// SqliteStore's tables for serve (issue 14): restartable jobs, the spend ledger and the
// serve record, their migration from a schema-6 file, and a kill mid-transaction.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>

#include "store/sqlite_store.h"
#include "store/testing/killed_mid_transaction.h"
#include "util/testing/fake_clock.h"
#include "util/testing/temp_dir.h"

namespace tpufleet {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

class ServeTablesTest : public ::testing::Test {
 protected:
  std::unique_ptr<SqliteStore> Open() {
    Result<std::unique_ptr<SqliteStore>> s = SqliteStore::Open(path_);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }

  JobRecord Job(std::string node, std::string id) {
    JobRecord j;
    j.fleet = "lab";
    j.node = std::move(node);
    j.id = std::move(id);
    j.name = "train";
    j.spec_json = R"({"id":")" + j.id + R"(","argv":["python3","train.py"]})";
    j.restart = "on-preemption";
    j.max_restarts = 3;
    j.state = "active";
    j.created_at = clock_.Now();
    j.updated_at = clock_.Now();
    return j;
  }

  SpendRecord Stretch(std::string fleet, std::string node, Clock::WallTime start,
                      std::optional<Clock::WallTime> end) {
    SpendRecord s;
    s.fleet = std::move(fleet);
    s.node = std::move(node);
    s.cloud_name = "projects/p/locations/us-central2-b/nodes/" + s.node;
    s.zone = "us-central2-b";
    s.type = "v4-8";
    s.capacity = "spot";
    s.state = "READY";
    s.usd_per_hour = 2.25;
    s.start = start;
    s.end = end;
    return s;
  }

  FakeClock clock_;
  TempDir tmp_;
  std::string path_ = tmp_.Path("state.db");
};

TEST_F(ServeTablesTest, JobsRoundTripAndAreReplacedByTheirKey) {
  auto store = Open();
  JobRecord a = Job("trainer", "j-1");
  ASSERT_TRUE(store->PutJob(a).ok());
  ASSERT_TRUE(store->PutJob(Job("eval", "j-2")).ok());
  JobRecord other = Job("trainer", "j-3");
  other.fleet = "other";
  ASSERT_TRUE(store->PutJob(other).ok());

  a.restarts = 2;
  a.state = "gave-up";
  a.last_reason = "failed (exit 1)";
  a.updated_at = clock_.Now() + minutes(5);
  ASSERT_TRUE(store->PutJob(a).ok());

  Result<std::vector<JobRecord>> lab = store->Jobs("lab");
  ASSERT_TRUE(lab.ok()) << lab.status().ToString();
  ASSERT_EQ(lab->size(), 2u);
  EXPECT_EQ((*lab)[0].node, "eval");  // ordered by node, then id
  const JobRecord& back = (*lab)[1];
  EXPECT_EQ(back.id, "j-1");
  EXPECT_EQ(back.name, "train");
  EXPECT_EQ(back.spec_json, a.spec_json);
  EXPECT_EQ(back.restart, "on-preemption");
  EXPECT_EQ(back.max_restarts, 3);
  EXPECT_EQ(back.restarts, 2);
  EXPECT_EQ(back.state, "gave-up");
  EXPECT_EQ(back.last_reason, "failed (exit 1)");
  EXPECT_EQ(back.created_at, a.created_at);
  EXPECT_EQ(back.updated_at, a.updated_at);
  EXPECT_EQ(store->Jobs("")->size(), 3u);
}

TEST_F(ServeTablesTest, SpendInsertsUpdatesAndSelectsByEnd) {
  auto store = Open();
  Clock::WallTime t0 = clock_.Now();
  Result<int64_t> closed = store->PutSpend(Stretch("lab", "a", t0, t0 + hours(1)));
  Result<int64_t> open = store->PutSpend(Stretch("lab", "b", t0 + hours(2), std::nullopt));
  ASSERT_TRUE(store->PutSpend(Stretch("other", "c", t0, std::nullopt)).ok());
  ASSERT_TRUE(closed.ok() && open.ok()) << closed.status().ToString();
  EXPECT_NE(*closed, *open);

  // Every stretch of the fleet, in start order; an open one has no end.
  Result<std::vector<SpendRecord>> all = store->Spend("lab", std::nullopt);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].id, *closed);
  EXPECT_EQ((*all)[0].end, t0 + hours(1));
  EXPECT_DOUBLE_EQ((*all)[0].usd_per_hour, 2.25);
  EXPECT_FALSE((*all)[1].end.has_value());

  // Since after the closed one ended: only the open one.
  Result<std::vector<SpendRecord>> later = store->Spend("lab", t0 + minutes(61));
  ASSERT_EQ(later->size(), 1u);
  EXPECT_EQ((*later)[0].node, "b");
  // Ending exactly at `since` counts.
  EXPECT_EQ(store->Spend("lab", t0 + hours(1))->size(), 2u);

  // Closing the open stretch updates it in place.
  SpendRecord b = (*later)[0];
  b.end = t0 + hours(3);
  b.state = "PREEMPTED";
  Result<int64_t> same = store->PutSpend(b);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(*same, *open);
  Result<std::vector<SpendRecord>> after = store->Spend("lab", t0 + hours(4));
  EXPECT_TRUE(after->empty());
  EXPECT_EQ((*store->Spend("lab", std::nullopt))[1].state, "PREEMPTED");
  EXPECT_EQ(store->Spend("", std::nullopt)->size(), 3u);

  b.id = 999;
  EXPECT_EQ(store->PutSpend(b).status().code(), StatusCode::kNotFound);
}

TEST_F(ServeTablesTest, ServeIsOneRowClearedOnlyByItsOwnPid) {
  auto store = Open();
  EXPECT_FALSE(store->Serve()->has_value());
  ServeRecord s{1234, "lab-box", {"lab", "eval"}, clock_.Now(), clock_.Now() + minutes(1)};
  ASSERT_TRUE(store->PutServe(s).ok());
  ServeRecord next = s;
  next.pid = 5678;
  ASSERT_TRUE(store->PutServe(next).ok());  // a later serve replaces the row

  Result<std::optional<ServeRecord>> back = store->Serve();
  ASSERT_TRUE(back.ok() && back->has_value());
  EXPECT_EQ((*back)->pid, 5678);
  EXPECT_EQ((*back)->host, "lab-box");
  EXPECT_EQ((*back)->fleets, (std::vector<std::string>{"lab", "eval"}));
  EXPECT_EQ((*back)->started_at, s.started_at);
  EXPECT_EQ((*back)->last_pass_at, s.last_pass_at);

  ASSERT_TRUE(store->ClearServe(1234).ok());  // the old one, ending late: not its row
  EXPECT_TRUE(store->Serve()->has_value());
  ASSERT_TRUE(store->ClearServe(5678).ok());
  EXPECT_FALSE(store->Serve()->has_value());
}

// A schema-6 file (from before serve) opens with empty jobs, spend and serve tables,
// its nodes kept, and the new tables take writes.
TEST_F(ServeTablesTest, AVersion6FileIsMigratedWithNothingServeKept) {
  {
    auto store = Open();
    NodeRecord n;
    n.fleet = "lab";
    n.name = "old";
    n.state = NodeState::kReady;
    ASSERT_TRUE(store->PutNode(n).ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "DROP TABLE serve; DROP TABLE spend; DROP TABLE jobs; "
                         "PRAGMA user_version = 6;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);

  auto store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Nodes("lab")->size(), 1u);
  EXPECT_TRUE(store->Jobs("")->empty());
  EXPECT_TRUE(store->Spend("", std::nullopt)->empty());
  EXPECT_FALSE(store->Serve()->has_value());
  ASSERT_TRUE(store->PutJob(Job("old", "j-1")).ok());
  EXPECT_EQ(store->Jobs("lab")->size(), 1u);
}

// Serve closes a stretch, opens the next and moves a job in one step; killed in the
// middle, the state is as before the step.
TEST_F(ServeTablesTest, AKillMidTransactionLeavesJobsAndSpendAsBefore) {
  Clock::WallTime t0 = clock_.Now();
  int64_t open_id = 0;
  {
    auto store = Open();
    ASSERT_TRUE(store->PutJob(Job("trainer", "j-1")).ok());
    open_id = *store->PutSpend(Stretch("lab", "trainer", t0, std::nullopt));
  }
  ASSERT_NO_FATAL_FAILURE(KillMidTransaction(path_, [&](SqliteStore& s) {
    SpendRecord closed = Stretch("lab", "trainer", t0, t0 + hours(1));
    closed.id = open_id;
    (void)s.PutSpend(closed);
    (void)s.PutSpend(Stretch("lab", "trainer", t0 + hours(1), std::nullopt));
    JobRecord j = Job("trainer", "j-1");
    j.restarts = 1;
    (void)s.PutJob(j);
    (void)s.PutServe({::getpid(), "h", {"lab"}, t0, t0});
  }));

  auto store = Open();
  Result<std::vector<SpendRecord>> spend = store->Spend("lab", std::nullopt);
  ASSERT_EQ(spend->size(), 1u);
  EXPECT_EQ((*spend)[0].id, open_id);
  EXPECT_FALSE((*spend)[0].end.has_value());
  EXPECT_EQ((*store->Jobs("lab"))[0].restarts, 0);
  EXPECT_FALSE(store->Serve()->has_value());
}

}  // namespace
}  // namespace tpufleet
