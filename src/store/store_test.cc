// The store's behaviour, the same on every backend: each test runs on SQLite and on
// PostgreSQL (testing/store_backends.h). What only one backend has (SQLite's file, its
// older schemas) is in sqlite_store_test.cc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "store/testing/killed_mid_transaction.h"
#include "store/testing/store_backends.h"

namespace tpufleet {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

TEST_P(StoreTest, NodesRoundTripWithTheirWorkers) {
  auto store = Open();
  ASSERT_TRUE(store->PutNode(Node("trainer", 4)).ok());
  ASSERT_TRUE(store->PutNode(Node("eval", 1)).ok());
  Result<std::vector<NodeRecord>> nodes = store->Nodes("lab");
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].name, "eval");  // ordered by name
  const NodeRecord& t = (*nodes)[1];
  EXPECT_EQ(t.cloud_name, "projects/p/locations/us-central2-b/nodes/trainer");
  EXPECT_EQ(t.request_id, "req-trainer");
  EXPECT_EQ(t.health, "HEALTHY");
  EXPECT_EQ(t.login, "alice");
  EXPECT_EQ(t.port, 2222);
  EXPECT_EQ(t.created_at, clock_.Now());
  ASSERT_EQ(t.workers.size(), 4u);
  EXPECT_EQ(t.workers[3].address, "198.18.0.5");
  EXPECT_EQ(t.workers[3].host_key, "ssh-ed25519 AAAA3");
  EXPECT_TRUE(t.workers[0].setup_done);
  EXPECT_FALSE(t.workers[1].setup_done);
  EXPECT_TRUE(store->Nodes("other-fleet")->empty());
  EXPECT_EQ(store->Nodes("")->size(), 2u);
}

TEST_P(StoreTest, PutReplacesTheNodeAndItsWorkers) {
  auto store = Open();
  ASSERT_TRUE(store->PutNode(Node("trainer", 4)).ok());
  NodeRecord smaller = Node("trainer", 1);
  smaller.state = NodeState::kPreempted;
  ASSERT_TRUE(store->PutNode(smaller).ok());
  Result<std::vector<NodeRecord>> nodes = store->Nodes("lab");
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ((*nodes)[0].state, NodeState::kPreempted);
  EXPECT_EQ((*nodes)[0].workers.size(), 1u);
}

TEST_P(StoreTest, DeleteRemovesTheWorkersToo) {
  auto store = Open();
  ASSERT_TRUE(store->PutNode(Node("trainer", 4)).ok());
  ASSERT_TRUE(store->DeleteNode("lab", "trainer").ok());
  EXPECT_TRUE(store->Nodes("lab")->empty());
  EXPECT_TRUE(store->DeleteNode("lab", "trainer").ok()) << "deleting twice is fine";
  // No orphaned worker rows: a new node of the same name starts with none.
  NodeRecord fresh = Node("trainer", 0);
  ASSERT_TRUE(store->PutNode(fresh).ok());
  EXPECT_TRUE((*store->Nodes("lab"))[0].workers.empty());
}

TEST_P(StoreTest, AFailedTransactionWritesNothing) {
  auto store = Open();
  Status s = store->Transaction([&]() -> Status {
    TPUFLEET_TRY(store->PutNode(Node("a", 1)));
    TPUFLEET_TRY(store->AddEvent({0, clock_.Now(), "lab", "a", "create-requested", ""}));
    return UnavailableError("the create call failed");
  });
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(store->Nodes("lab")->empty());
  EXPECT_TRUE(store->Events({})->empty());
  EXPECT_EQ(store->Transaction([] { return Status::Ok(); }).code(), StatusCode::kOk);
}

TEST_P(StoreTest, NestedTransactionsAreRefused) {
  auto store = Open();
  Status inner;
  Status outer = store->Transaction([&]() -> Status {
    inner = store->Transaction([] { return Status::Ok(); });
    return Status::Ok();
  });
  EXPECT_TRUE(outer.ok());
  EXPECT_EQ(inner.code(), StatusCode::kInternal);
}

// kill -9 in the middle of a step: a process that dies inside a transaction leaves the
// state as it was before the step.
TEST_P(StoreTest, AProcessKilledMidTransactionLeavesNoTrace) {
  {
    auto store = Open();
    ASSERT_TRUE(store->PutNode(Node("kept", 1)).ok());
  }
  ASSERT_NO_FATAL_FAILURE(KillMidTransaction([&] { return TryOpen(); },
                                             [&](Store& s) {
                                               (void)s.PutNode(Node("half", 4));
                                               (void)s.DeleteNode("lab", "kept");
                                             }));
  auto store = Open();
  Result<std::vector<NodeRecord>> nodes = store->Nodes("lab");
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ((*nodes)[0].name, "kept");
}

TEST_P(StoreTest, TwoOpenersSeeEachOthersWrites) {
  auto a = Open();
  auto b = Open();
  ASSERT_TRUE(a->PutNode(Node("trainer", 1)).ok());
  EXPECT_EQ(b->Nodes("lab")->size(), 1u);
  ASSERT_TRUE(b->DeleteNode("lab", "trainer").ok());
  EXPECT_TRUE(a->Nodes("lab")->empty());
}

TEST_P(StoreTest, EventsFilterAndKeepTheNewestInOrder) {
  auto store = Open();
  auto add = [&](std::string node, std::string kind) {
    clock_.Advance(std::chrono::seconds(1));
    ASSERT_TRUE(store->AddEvent({0, clock_.Now(), "lab", node, kind, "zone=us-central2-b"}).ok());
  };
  add("a", "create-requested");
  Clock::WallTime after_first = clock_.Now();
  add("a", "stockout");
  add("b", "stockout");
  add("a", "ready");
  Result<std::vector<EventRecord>> all = store->Events({});
  ASSERT_EQ(all->size(), 4u);
  EXPECT_EQ((*all)[0].kind, "create-requested");
  EXPECT_LT((*all)[0].id, (*all)[3].id);
  EXPECT_EQ((*all)[1].detail, "zone=us-central2-b");
  EventQuery stockouts;
  stockouts.fleet = "lab";
  stockouts.kind = "stockout";
  EXPECT_EQ(store->Events(stockouts)->size(), 2u);
  EventQuery of_a;
  of_a.node = "a";
  EXPECT_EQ(store->Events(of_a)->size(), 3u);
  EventQuery since{"lab", "", "", after_first + std::chrono::seconds(1)};
  EXPECT_EQ(store->Events(since)->size(), 3u);
  EventQuery newest{"", "", "", std::nullopt, 2};
  Result<std::vector<EventRecord>> two = store->Events(newest);
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0].node, "b");
  EXPECT_EQ((*two)[1].kind, "ready");
}

TEST_P(StoreTest, AStoreFromANewerTpufleetIsRefused) {
  { auto store = Open(); }
  ASSERT_NO_FATAL_FAILURE(ExecBehindBack(postgres() ? "UPDATE tpufleet_schema SET version = 99"
                                                    : "PRAGMA user_version = 99"));
  Result<std::unique_ptr<SqlStore>> s = TryOpen();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.status().message().find("newer tpufleet"), std::string::npos);
}

TEST_P(StoreTest, LabelsRoundTripAndAreReplacedWithTheNode) {
  auto store = Open();
  NodeRecord n = Node("trainer", 1);
  n.labels = {{"team", "nlp"}, {"role", "train"}, {"quote", "it's \"x\" {}"}};
  ASSERT_TRUE(store->PutNode(n).ok());
  EXPECT_EQ((*store->Nodes("lab"))[0].labels, n.labels);
  n.labels = {};
  ASSERT_TRUE(store->PutNode(n).ok());
  EXPECT_TRUE((*store->Nodes("lab"))[0].labels.empty());

  ASSERT_NO_FATAL_FAILURE(ExecBehindBack("UPDATE nodes SET labels = '{\"team\": 1}'"));
  Result<std::vector<NodeRecord>> edited = store->Nodes("lab");
  EXPECT_EQ(edited.status().code(), StatusCode::kInternal);
  EXPECT_NE(edited.status().message().find("labels of node trainer"), std::string::npos);
}

// A node's data disks (issue 15) round-trip with it; a column edited into something else
// is a clear error.
TEST_P(StoreTest, Issue15DataDisksRoundTripWithTheNode) {
  auto store = Open();
  NodeRecord n = Node("trainer", 1);
  n.data_disks = {{"projects/p/zones/z/disks/data", "read-only"},
                  {"projects/p/zones/z/disks/scratch", "read-write"}};
  ASSERT_TRUE(store->PutNode(n).ok());
  EXPECT_EQ((*store->Nodes("lab"))[0].data_disks, n.data_disks);
  EXPECT_EQ((*store->Nodes("lab"))[0].data_disks[0].Name(), "data");
  n.data_disks = {};
  ASSERT_TRUE(store->PutNode(n).ok());
  EXPECT_TRUE((*store->Nodes("lab"))[0].data_disks.empty());

  ASSERT_NO_FATAL_FAILURE(ExecBehindBack("UPDATE nodes SET data_disks = '[{\"source\": 1}]'"));
  Result<std::vector<NodeRecord>> edited = store->Nodes("lab");
  EXPECT_EQ(edited.status().code(), StatusCode::kInternal);
  EXPECT_NE(edited.status().message().find("data disks of node trainer"), std::string::npos);
}

TEST_P(StoreTest, LeftoversRoundTripAndAreForgottenOneByOne) {
  auto store = Open();
  LeftoverRecord node{"lab",   "trainer", "us-central2-a", false,  "gcp-tpu",   "p",
                      "v4-32", "spot",    "stockout",      "boom", clock_.Now()};
  LeftoverRecord queued = node;
  queued.queued = true;
  LeftoverRecord other = node;
  other.fleet = "other";
  for (const LeftoverRecord* x : {&node, &queued, &other}) {
    ASSERT_TRUE(store->PutLeftover(*x).ok());
  }
  Result<std::vector<LeftoverRecord>> lab = store->Leftovers("lab");
  ASSERT_TRUE(lab.ok()) << lab.status().ToString();
  ASSERT_EQ(lab->size(), 2u);
  EXPECT_FALSE((*lab)[0].queued);
  EXPECT_TRUE((*lab)[1].queued);
  EXPECT_EQ((*lab)[0].zone, "us-central2-a");
  EXPECT_EQ((*lab)[0].type, "v4-32");
  EXPECT_EQ((*lab)[0].capacity, "spot");
  EXPECT_EQ((*lab)[0].reason, "stockout");
  EXPECT_EQ((*lab)[0].last_error, "boom");
  EXPECT_EQ((*lab)[0].since, clock_.Now());
  EXPECT_EQ(store->Leftovers("")->size(), 3u);

  node.last_error = "again";  // a retry that failed too replaces the record
  ASSERT_TRUE(store->PutLeftover(node).ok());
  EXPECT_EQ((*store->Leftovers("lab"))[0].last_error, "again");
  ASSERT_TRUE(store->DeleteLeftover(node).ok());
  ASSERT_TRUE(store->DeleteLeftover(node).ok());  // gone already: fine
  lab = store->Leftovers("lab");
  ASSERT_EQ(lab->size(), 1u);
  EXPECT_TRUE((*lab)[0].queued);
}

// A state the store does not know (written by a newer build, or the API's next state)
// is kept as it was written.
TEST_P(StoreTest, AnUnknownStateKeepsItsText) {
  auto store = Open();
  NodeRecord n = Node("trainer", 1);
  n.state = NodeState::Parse("MIGRATING");
  ASSERT_TRUE(store->PutNode(n).ok());
  NodeState back = (*store->Nodes("lab"))[0].state;
  EXPECT_EQ(back.value(), NodeState::kUnknown);
  EXPECT_EQ(back.Name(), "MIGRATING");
}

TEST_P(StoreTest, JobsRoundTripAndAreReplacedByTheirKey) {
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

TEST_P(StoreTest, SpendInsertsUpdatesAndSelectsByEnd) {
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

TEST_P(StoreTest, Issue17AStretchKeepsWhoItIsBilledTo) {
  auto store = Open();
  Clock::WallTime t0 = clock_.Now();
  SpendRecord s = Stretch("lab", "a", t0, std::nullopt);
  s.owner = "ada";
  Result<int64_t> id = store->PutSpend(s);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ((*store->Spend("lab", std::nullopt))[0].owner, "ada");
  // Closing it (an update) keeps the owner it was opened with unless told otherwise.
  s.id = *id;
  s.end = t0 + hours(1);
  ASSERT_TRUE(store->PutSpend(s).ok());
  EXPECT_EQ((*store->Spend("lab", std::nullopt))[0].owner, "ada");
}

TEST_P(StoreTest, Issue17FleetsKeepTheirOwnerAndBudgetAsLastApplied) {
  auto store = Open();
  EXPECT_TRUE(store->Fleets()->empty());
  FleetRecord lab{"lab", "ada", 25.5, std::nullopt, clock_.Now()};
  FleetRecord free_one{"free", "bo", std::nullopt, std::nullopt, clock_.Now()};
  ASSERT_TRUE(store->PutFleet(lab).ok());
  ASSERT_TRUE(store->PutFleet(free_one).ok());
  Result<std::vector<FleetRecord>> fleets = store->Fleets();
  ASSERT_TRUE(fleets.ok()) << fleets.status().ToString();
  ASSERT_EQ(fleets->size(), 2u);  // by name
  EXPECT_EQ((*fleets)[0].name, "free");
  EXPECT_FALSE((*fleets)[0].usd_per_day.has_value());
  EXPECT_FALSE((*fleets)[0].usd_total.has_value());
  EXPECT_EQ((*fleets)[1].owner, "ada");
  EXPECT_EQ((*fleets)[1].usd_per_day, 25.5);
  EXPECT_FALSE((*fleets)[1].usd_total.has_value());
  EXPECT_EQ((*fleets)[1].updated_at, lab.updated_at);

  // Applying the spec again replaces the row: another owner, the day's limit gone.
  lab.owner = "cy";
  lab.usd_per_day.reset();
  lab.usd_total = 1000;
  ASSERT_TRUE(store->PutFleet(lab).ok());
  fleets = store->Fleets();
  ASSERT_EQ(fleets->size(), 2u);
  EXPECT_EQ((*fleets)[1].owner, "cy");
  EXPECT_FALSE((*fleets)[1].usd_per_day.has_value());
  EXPECT_EQ((*fleets)[1].usd_total, 1000);
}

TEST_P(StoreTest, Issue17JobRunsKeepWhoRanThemAndEndInPlace) {
  auto store = Open();
  Clock::WallTime t0 = clock_.Now();
  EXPECT_TRUE(store->JobRuns("", std::nullopt)->empty());
  JobRunRecord train{"lab", "trainer", "jabc1234", "train", "ada", "ada", t0, std::nullopt};
  JobRunRecord eval{"lab", "trainer", "jdef5678", "eval", "bo", "", t0 + hours(1), t0 + hours(2)};
  JobRunRecord other{"eval", "e1", "jghi9012", "sweep", "cy", "cy", t0, t0 + hours(1)};
  for (const JobRunRecord& r : {eval, train, other}) {
    ASSERT_TRUE(store->PutJobRun(r).ok());
  }
  Result<std::vector<JobRunRecord>> lab = store->JobRuns("lab", std::nullopt);
  ASSERT_TRUE(lab.ok()) << lab.status().ToString();
  ASSERT_EQ(lab->size(), 2u);  // by start
  EXPECT_EQ((*lab)[0].id, "jabc1234");
  EXPECT_EQ((*lab)[0].person, "ada");
  EXPECT_EQ((*lab)[0].user, "ada");
  EXPECT_EQ((*lab)[0].start, t0);
  EXPECT_FALSE((*lab)[0].end.has_value());
  EXPECT_EQ((*lab)[1].name, "eval");
  EXPECT_EQ((*lab)[1].user, "");
  EXPECT_EQ((*lab)[1].end, t0 + hours(2));
  EXPECT_EQ(store->JobRuns("", std::nullopt)->size(), 3u);
  // Since: the runs still open or ended then or later.
  EXPECT_EQ(store->JobRuns("", t0 + hours(2))->size(), 2u);
  EXPECT_EQ(store->JobRuns("", t0 + hours(3))->size(), 1u);

  // Ending a run replaces its row: one run per (fleet, node, id).
  train.end = t0 + hours(4);
  ASSERT_TRUE(store->PutJobRun(train).ok());
  lab = store->JobRuns("lab", std::nullopt);
  ASSERT_EQ(lab->size(), 2u);
  EXPECT_EQ((*lab)[0].end, t0 + hours(4));
}

TEST_P(StoreTest, Issue17UsageAddsUpPerNodeHourAndJob) {
  auto store = Open();
  Clock::WallTime h0 = std::chrono::floor<hours>(clock_.Now());
  EXPECT_TRUE(store->Usage("", std::nullopt)->empty());
  // Two rounds of the same hour and job add up; another job, hour or fleet is a row.
  ASSERT_TRUE(store->AddUsage({"lab", "trainer", "j1", h0, 30, 27, 1.5, 0, h0 + minutes(1)}).ok());
  ASSERT_TRUE(store->AddUsage({"lab", "trainer", "j1", h0, 30, 24, 3, 0, h0 + minutes(2)}).ok());
  ASSERT_TRUE(store->AddUsage({"lab", "trainer", "", h0, 30, 0, 0, 30, h0 + minutes(3)}).ok());
  ASSERT_TRUE(store
                  ->AddUsage({"lab", "trainer", "j1", h0 + hours(1), 10, 5, 0, 0,
                              h0 + hours(1) + std::chrono::seconds(10)})
                  .ok());
  ASSERT_TRUE(store->AddUsage({"eval", "e1", "", h0, 60, 0, 0, 60, h0 + minutes(1)}).ok());
  // A late round's measure does not move measured_until back.
  ASSERT_TRUE(
      store->AddUsage({"lab", "trainer", "j1", h0, 0, 0, 0, 0, h0 + std::chrono::seconds(30)})
          .ok());

  Result<std::vector<UsageRecord>> lab = store->Usage("lab", std::nullopt);
  ASSERT_TRUE(lab.ok()) << lab.status().ToString();
  ASSERT_EQ(lab->size(), 3u);  // by hour, then job
  EXPECT_EQ((*lab)[0].job, "");
  EXPECT_EQ((*lab)[0].idle_seconds, 30);
  const UsageRecord& j1 = (*lab)[1];
  EXPECT_EQ(j1.job, "j1");
  EXPECT_EQ(j1.hour, h0);
  EXPECT_DOUBLE_EQ(j1.seconds, 60);
  EXPECT_DOUBLE_EQ(j1.busy_seconds, 51);
  EXPECT_DOUBLE_EQ(j1.input_bound_seconds, 4.5);
  EXPECT_EQ(j1.measured_until, h0 + minutes(2));
  EXPECT_EQ((*lab)[2].hour, h0 + hours(1));
  EXPECT_EQ(store->Usage("", std::nullopt)->size(), 4u);
  // Since: the rows of the hours that end after it.
  EXPECT_EQ(store->Usage("lab", h0 + minutes(59))->size(), 3u);
  EXPECT_EQ(store->Usage("lab", h0 + hours(1))->size(), 1u);
}

TEST_P(StoreTest, ServeIsOneRowClearedOnlyByItsOwnPid) {
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

// Serve closes a stretch, opens the next and moves a job in one step; killed in the
// middle, the state is as before the step.
TEST_P(StoreTest, AKillMidTransactionLeavesJobsAndSpendAsBefore) {
  Clock::WallTime t0 = clock_.Now();
  int64_t open_id = 0;
  {
    auto store = Open();
    ASSERT_TRUE(store->PutJob(Job("trainer", "j-1")).ok());
    open_id = *store->PutSpend(Stretch("lab", "trainer", t0, std::nullopt));
  }
  ASSERT_NO_FATAL_FAILURE(
      KillMidTransaction([&] { return TryOpen(); },
                         [&](Store& s) {
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

// Two processes' read-modify-write steps on one row at once: SQLite lets one writer in
// at a time; PostgreSQL's serializable transactions make one of them run again. Either
// way no step's update is lost.
TEST_P(StoreTest, StepsAtOnceLoseNoUpdate) {
  constexpr int kEach = 15;
  auto first = Open();
  ASSERT_TRUE(first->PutJob(Job("trainer", "j-1")).ok());
  auto bump = [&](SqlStore* s) {
    for (int i = 0; i < kEach; ++i) {
      Status st = s->Transaction([&]() -> Status {
        TPUFLEET_ASSIGN_OR_RETURN(std::vector<JobRecord> jobs, s->Jobs("lab"));
        jobs.at(0).restarts += 1;
        return s->PutJob(jobs[0]);
      });
      EXPECT_TRUE(st.ok()) << st.ToString();
    }
  };
  auto a = Open();
  auto b = Open();
  std::thread ta(bump, a.get());
  std::thread tb(bump, b.get());
  ta.join();
  tb.join();
  EXPECT_EQ((*first->Jobs("lab"))[0].restarts, 2 * kEach);
}

// Several processes opening one new store at once create its schema once.
TEST_P(StoreTest, OpenersAtOnceMigrateANewStoreOnce) {
  constexpr int kOpeners = 4;
  std::atomic<int> opened{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kOpeners; ++i) {
    threads.emplace_back([&] {
      Result<std::unique_ptr<SqlStore>> s = TryOpen();
      EXPECT_TRUE(s.ok()) << s.status().ToString();
      opened += s.ok() ? 1 : 0;
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  EXPECT_EQ(opened.load(), kOpeners);
  auto store = Open();
  ASSERT_TRUE(store->PutNode(Node("trainer", 1)).ok());
  EXPECT_EQ(store->Nodes("lab")->size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, ::testing::ValuesIn(kStoreBackends),
                         StoreBackendName);

}  // namespace
}  // namespace tpufleet
