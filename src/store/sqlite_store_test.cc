#include "store/sqlite_store.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "store/sqlite_internal.h"
#include "store/testing/killed_mid_transaction.h"
#include "util/testing/as_nobody.h"
#include "util/testing/fake_clock.h"
#include "util/testing/temp_dir.h"

namespace tpufleet {
namespace {

// Schema 1 as the first release wrote it: a frozen copy, not the store's own kSchemaV1,
// so an edit to that shipped step cannot pass unnoticed. The migration tests build the
// files older releases wrote from it.
constexpr const char* kFrozenSchemaV1 = R"sql(
CREATE TABLE nodes (
  fleet TEXT NOT NULL, name TEXT NOT NULL, provider TEXT NOT NULL, project TEXT NOT NULL,
  zone TEXT NOT NULL, type TEXT NOT NULL, runtime_version TEXT NOT NULL,
  capacity TEXT NOT NULL, queued_resource TEXT NOT NULL, cloud_name TEXT NOT NULL,
  request_id TEXT NOT NULL, state TEXT NOT NULL, health TEXT NOT NULL,
  spec_hash TEXT NOT NULL, login TEXT NOT NULL, port INTEGER NOT NULL,
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
  PRIMARY KEY (fleet, name));
CREATE TABLE workers (
  fleet TEXT NOT NULL, node TEXT NOT NULL, idx INTEGER NOT NULL, address TEXT NOT NULL,
  hostname TEXT NOT NULL, host_key TEXT NOT NULL, setup_done INTEGER NOT NULL,
  PRIMARY KEY (fleet, node, idx),
  FOREIGN KEY (fleet, node) REFERENCES nodes (fleet, name) ON DELETE CASCADE);
CREATE TABLE events (
  id INTEGER PRIMARY KEY AUTOINCREMENT, time INTEGER NOT NULL, fleet TEXT NOT NULL,
  node TEXT NOT NULL, kind TEXT NOT NULL, detail TEXT NOT NULL);
CREATE INDEX events_by_node ON events (fleet, node, kind, time);
)sql";

// Takes today's schema back to version 6 (before serve's tables), for the tests that
// make an older file from today's.
constexpr const char* kToV6 =
    "DROP TABLE serve; DROP TABLE spend; DROP TABLE jobs; PRAGMA user_version = 6;";

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    dir_ = tmp_.path();
    path_ = tmp_.Path("state.db");
  }

  std::unique_ptr<SqliteStore> Open() {
    Result<std::unique_ptr<SqliteStore>> s = SqliteStore::Open(path_);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }

  // Runs `sql` on the database file behind the store's back, as an older release or an
  // edit by hand would have written it.
  void ExecOnFile(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
    std::string error = sqlite3_errmsg(db);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << error;
  }

  // Makes the file as an older release left it (`older_sql` run on it), opens the store
  // on it (which migrates it) and reads fleet "lab"'s nodes, of which there must be one.
  void OpenMigrated(const std::string& older_sql, std::unique_ptr<SqliteStore>* store,
                    std::vector<NodeRecord>* nodes) {
    ASSERT_NO_FATAL_FAILURE(ExecOnFile(older_sql));
    *store = Open();
    ASSERT_NE(*store, nullptr);
    Result<std::vector<NodeRecord>> lab = (*store)->Nodes("lab");
    ASSERT_TRUE(lab.ok()) << lab.status().ToString();
    ASSERT_EQ(lab->size(), 1u);
    *nodes = std::move(*lab);
  }

  NodeRecord Node(std::string name, int workers) {
    NodeRecord n;
    n.fleet = "lab";
    n.name = std::move(name);
    n.provider = "gcp-tpu";
    n.project = "p";
    n.zone = "us-central2-b";
    n.type = "v4-32";
    n.runtime_version = "tpu-ubuntu2204-base";
    n.capacity = "spot";
    n.cloud_name = "projects/p/locations/us-central2-b/nodes/" + n.name;
    n.request_id = "req-" + n.name;
    n.state = NodeState::kReady;
    n.health = "HEALTHY";
    n.spec_hash = "h1";
    n.login = "alice";
    n.port = 2222;
    n.created_at = clock_.Now();
    n.updated_at = clock_.Now();
    for (int i = 0; i < workers; ++i) {
      n.workers.push_back({i, "198.18.0." + std::to_string(i + 2), "w" + std::to_string(i),
                           "ssh-ed25519 AAAA" + std::to_string(i), i == 0, ""});
    }
    return n;
  }

  FakeClock clock_;
  TempDir tmp_;
  std::string dir_;
  std::string path_;
};

TEST_F(SqliteStoreTest, NodesRoundTripWithTheirWorkers) {
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

TEST_F(SqliteStoreTest, PutReplacesTheNodeAndItsWorkers) {
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

TEST_F(SqliteStoreTest, DeleteRemovesTheWorkersToo) {
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

TEST_F(SqliteStoreTest, DataSurvivesReopenAndTheFileIsPrivate) {
  {
    auto store = Open();
    ASSERT_TRUE(store->PutNode(Node("trainer", 2)).ok());
  }
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto again = Open();
  ASSERT_EQ(again->Nodes("lab")->size(), 1u);
}

TEST_F(SqliteStoreTest, AFailedTransactionWritesNothing) {
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

TEST_F(SqliteStoreTest, NestedTransactionsAreRefused) {
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
TEST_F(SqliteStoreTest, AProcessKilledMidTransactionLeavesNoTrace) {
  {
    auto store = Open();
    ASSERT_TRUE(store->PutNode(Node("kept", 1)).ok());
  }
  ASSERT_NO_FATAL_FAILURE(KillMidTransaction(path_, [&](SqliteStore& s) {
    (void)s.PutNode(Node("half", 4));
    (void)s.DeleteNode("lab", "kept");
  }));
  auto store = Open();
  Result<std::vector<NodeRecord>> nodes = store->Nodes("lab");
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ((*nodes)[0].name, "kept");
}

TEST_F(SqliteStoreTest, TwoOpenersSeeEachOthersWrites) {
  auto a = Open();
  auto b = Open();
  ASSERT_TRUE(a->PutNode(Node("trainer", 1)).ok());
  EXPECT_EQ(b->Nodes("lab")->size(), 1u);
  ASSERT_TRUE(b->DeleteNode("lab", "trainer").ok());
  EXPECT_TRUE(a->Nodes("lab")->empty());
}

TEST_F(SqliteStoreTest, EventsFilterAndKeepTheNewestInOrder) {
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

// serve's pass reads every node's recent events: through the index, not a scan of the
// whole table per node (what the 256-node bench found; bench/RESULTS.md).
TEST_F(SqliteStoreTest, ANodesEventsAreReadThroughTheIndex) {
  auto store = Open();
  ASSERT_TRUE(store->AddEvent({0, clock_.Now(), "lab", "a", "ready", ""}).ok());
  EventQuery of_a;
  of_a.fleet = "lab";
  of_a.node = "a";
  of_a.limit = 200;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* plan = nullptr;
  std::string sql = "EXPLAIN QUERY PLAN " + sqlite_internal::EventsSql(of_a);
  ASSERT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &plan, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  std::string details;
  while (sqlite3_step(plan) == SQLITE_ROW) {
    details += reinterpret_cast<const char*>(sqlite3_column_text(plan, 3));
    details += "; ";
  }
  sqlite3_finalize(plan);
  sqlite3_close(db);
  EXPECT_NE(details.find("USING INDEX events_by_node (fleet=? AND node=?)"), std::string::npos)
      << details;
  EXPECT_EQ(store->Events(of_a)->size(), 1u);
}

TEST_F(SqliteStoreTest, AFileFromANewerTpufleetIsRefused) {
  {
    auto store = Open();
  }
  ASSERT_NO_FATAL_FAILURE(ExecOnFile("PRAGMA user_version = 99"));
  Result<std::unique_ptr<SqliteStore>> s = SqliteStore::Open(path_);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.status().message().find("newer tpufleet"), std::string::npos);
}

TEST_F(SqliteStoreTest, LabelsRoundTripAndAreReplacedWithTheNode) {
  auto store = Open();
  NodeRecord n = Node("trainer", 1);
  n.labels = {{"team", "nlp"}, {"role", "train"}, {"quote", "it's \"x\" {}"}};
  ASSERT_TRUE(store->PutNode(n).ok());
  EXPECT_EQ((*store->Nodes("lab"))[0].labels, n.labels);
  n.labels = {};
  ASSERT_TRUE(store->PutNode(n).ok());
  EXPECT_TRUE((*store->Nodes("lab"))[0].labels.empty());

  ASSERT_NO_FATAL_FAILURE(ExecOnFile("UPDATE nodes SET labels = '{\"team\": 1}'"));
  Result<std::vector<NodeRecord>> edited = store->Nodes("lab");
  EXPECT_EQ(edited.status().code(), StatusCode::kInternal);
  EXPECT_NE(edited.status().message().find("labels of node trainer"), std::string::npos);
}

// A state file written by a build before labels (schema 1) opens, keeps its nodes, and
// they have no labels until the next `up` records them.
TEST_F(SqliteStoreTest, AVersion1FileIsMigratedAndItsNodesHaveNoLabels) {
  // A file as the first release wrote it.
  const std::string v1 = std::string(kFrozenSchemaV1) + R"sql(
INSERT INTO nodes VALUES ('lab', 'old', 'gcp-tpu', 'p', 'us-central2-b', 'v4-8', 'rt',
  'spot', '', '', 'req', 'READY', '', 'h', 'alice', 0, 1, 2);
INSERT INTO workers VALUES ('lab', 'old', 0, '198.18.0.2', 'w0', 'ssh-ed25519 AAAA0', 1);
PRAGMA user_version = 1;
)sql";
  std::unique_ptr<SqliteStore> store;
  std::vector<NodeRecord> nodes;
  ASSERT_NO_FATAL_FAILURE(OpenMigrated(v1, &store, &nodes));
  EXPECT_EQ(nodes[0].name, "old");
  EXPECT_TRUE(nodes[0].labels.empty());
  ASSERT_EQ(nodes[0].workers.size(), 1u);
  EXPECT_EQ(nodes[0].workers[0].address, "198.18.0.2");

  NodeRecord labelled = nodes[0];
  labelled.labels = {{"team", "a"}};
  ASSERT_TRUE(store->PutNode(labelled).ok());
  store.reset();
  auto reopened = Open();  // migrated once: opening again finds schema 7 and changes nothing
  EXPECT_EQ((*reopened->Nodes("lab"))[0].labels, labelled.labels);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* version = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &version, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(version), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(version, 0), 7);
  sqlite3_finalize(version);
  sqlite3_close(db);
}

TEST_F(SqliteStoreTest, LeftoversRoundTripAndAreForgottenOneByOne) {
  auto store = Open();
  LeftoverRecord node{"lab",  "trainer", "us-central2-a", false,    "gcp-tpu", "p",
                      "v4-32", "spot",   "stockout",      "boom",   clock_.Now()};
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

// A state file written before leftovers were recorded (schema 2) opens, keeps its nodes
// and labels, and has no leftovers; one can be recorded at once.
TEST_F(SqliteStoreTest, AVersion2FileIsMigratedAndHasNoLeftovers) {
  // Schema 2 as that release wrote it: schema 1, then its labels.
  const std::string v2 = std::string(kFrozenSchemaV1) + R"sql(
ALTER TABLE nodes ADD COLUMN labels TEXT NOT NULL DEFAULT '{}';
INSERT INTO nodes VALUES ('lab', 'old', 'gcp-tpu', 'p', 'us-central2-b', 'v4-8', 'rt',
  'spot', '', '', 'req', 'REQUESTED', '', 'h', 'alice', 0, 1, 2, '{"team":"a"}');
PRAGMA user_version = 2;
)sql";
  std::unique_ptr<SqliteStore> store;
  std::vector<NodeRecord> nodes;
  ASSERT_NO_FATAL_FAILURE(OpenMigrated(v2, &store, &nodes));
  EXPECT_EQ(nodes[0].request_id, "req");
  EXPECT_EQ(nodes[0].labels.at("team"), "a");
  Result<std::vector<LeftoverRecord>> leftovers = store->Leftovers("");
  ASSERT_TRUE(leftovers.ok()) << leftovers.status().ToString();
  EXPECT_TRUE(leftovers->empty());
  LeftoverRecord x;
  x.fleet = "lab";
  x.name = "old";
  x.zone = "us-central2-a";
  ASSERT_TRUE(store->PutLeftover(x).ok());
  store.reset();
  auto reopened = Open();
  EXPECT_EQ(reopened->Leftovers("lab")->size(), 1u);
}

// A state file written before setup digests were recorded (schema 3) opens; its set-up
// workers keep setup_done and an unknown digest (""), and a digest round-trips after.
TEST_F(SqliteStoreTest, Issue11AVersion3FileIsMigratedAndItsSetupVersionIsUnknown) {
  {
    auto store = Open();  // today's schema, taken back to version 3 below
    ASSERT_TRUE(store->PutNode(Node("old", 1)).ok());
  }
  const std::string to_v3 =
      std::string(kToV6) +
      "ALTER TABLE workers DROP COLUMN internal_address; ALTER TABLE workers DROP COLUMN "
      "agent_sha256; ALTER TABLE workers DROP COLUMN setup_digest; PRAGMA user_version = 3;";
  std::unique_ptr<SqliteStore> store;
  std::vector<NodeRecord> nodes;
  ASSERT_NO_FATAL_FAILURE(OpenMigrated(to_v3, &store, &nodes));
  ASSERT_EQ(nodes[0].workers.size(), 1u);
  EXPECT_TRUE(nodes[0].workers[0].setup_done);
  EXPECT_EQ(nodes[0].workers[0].setup_digest, "");
  NodeRecord n = nodes[0];
  n.workers[0].setup_digest = "0123456789abcdef";
  ASSERT_TRUE(store->PutNode(n).ok());
  EXPECT_EQ((*store->Nodes("lab"))[0].workers[0].setup_digest, "0123456789abcdef");
}

// A state file written before the agent was recorded (schema 4) opens; its workers'
// agent is not known (""), so the next `up` looks, and a hash round-trips after.
TEST_F(SqliteStoreTest, Issue12AVersion4FileIsMigratedAndItsAgentIsUnknown) {
  {
    auto store = Open();
    NodeRecord n = Node("old", 1);
    n.workers[0].setup_digest = "0123456789abcdef";
    ASSERT_TRUE(store->PutNode(n).ok());
  }
  std::unique_ptr<SqliteStore> store;
  std::vector<NodeRecord> nodes;
  ASSERT_NO_FATAL_FAILURE(OpenMigrated(
      std::string(kToV6) +
          "ALTER TABLE workers DROP COLUMN internal_address; ALTER TABLE workers DROP COLUMN "
          "agent_sha256; PRAGMA user_version = 4;",
      &store, &nodes));
  ASSERT_EQ(nodes[0].workers.size(), 1u);
  EXPECT_EQ(nodes[0].workers[0].setup_digest, "0123456789abcdef");
  EXPECT_EQ(nodes[0].workers[0].agent_sha256, "");
  NodeRecord n = nodes[0];
  n.workers[0].agent_sha256 = std::string(64, 'a');
  ASSERT_TRUE(store->PutNode(n).ok());
  EXPECT_EQ((*store->Nodes("lab"))[0].workers[0].agent_sha256, std::string(64, 'a'));
}

// A state file written before workers' internal addresses were kept (schema 5) opens
// with none (jobs fall back to the SSH address), and one round-trips after.
TEST_F(SqliteStoreTest, Issue12AVersion5FileIsMigratedWithoutInternalAddresses) {
  {
    auto store = Open();
    NodeRecord n = Node("old", 1);
    n.workers[0].internal_address = "10.0.0.2";
    ASSERT_TRUE(store->PutNode(n).ok());
  }
  std::unique_ptr<SqliteStore> store;
  std::vector<NodeRecord> nodes;
  ASSERT_NO_FATAL_FAILURE(OpenMigrated(
      std::string(kToV6) +
          "ALTER TABLE workers DROP COLUMN internal_address; PRAGMA user_version = 5;",
      &store, &nodes));
  ASSERT_EQ(nodes[0].workers.size(), 1u);
  EXPECT_EQ(nodes[0].workers[0].internal_address, "");
  NodeRecord n = nodes[0];
  n.workers[0].internal_address = "10.0.0.3";
  ASSERT_TRUE(store->PutNode(n).ok());
  EXPECT_EQ((*store->Nodes("lab"))[0].workers[0].internal_address, "10.0.0.3");
}

// A state the store does not know (written by a newer build, or the API's next state)
// is kept as it was written.
TEST_F(SqliteStoreTest, AnUnknownStateKeepsItsText) {
  auto store = Open();
  NodeRecord n = Node("trainer", 1);
  n.state = NodeState::Parse("MIGRATING");
  ASSERT_TRUE(store->PutNode(n).ok());
  NodeState back = (*store->Nodes("lab"))[0].state;
  EXPECT_EQ(back.value(), NodeState::kUnknown);
  EXPECT_EQ(back.Name(), "MIGRATING");
}

TEST_F(SqliteStoreTest, AnUnwritablePlaceIsAClearError) {
  Result<std::unique_ptr<SqliteStore>> s = SqliteStore::Open(dir_ + "/no/such/dir/state.db");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(s.status().message().find("/no/such/dir/state.db"), std::string::npos);
}

TEST_F(SqliteStoreTest, Issue10AStateFileThatIsASymlinkIsRefused) {
  // A link planted in the state dir would make tpufleet write its store (and SQLite its
  // -wal and -shm files beside it) wherever the link points.
  std::string elsewhere = dir_ + "/elsewhere.db";
  ASSERT_EQ(::symlink(elsewhere.c_str(), path_.c_str()), 0);
  Result<std::unique_ptr<SqliteStore>> s = SqliteStore::Open(path_);
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition) << s.status().ToString();
  EXPECT_NE(s.status().message().find("is a symbolic link"), std::string::npos);
  EXPECT_NE(::access(elsewhere.c_str(), F_OK), 0);  // nothing was made there
}

// Issue 10, the pattern of finding 6 in the store: a local user who could create names
// where the database goes (a shared or sticky directory) planted a symlink, and root's
// tpufleet created its database where the link pointed; or planted a database of its
// own, whose addresses and pinned host keys tpufleet then trusted.
TEST_F(SqliteStoreTest, Issue10ALinkOrSomeoneElsesDatabaseIsRefused) {
  if (auto why = NobodySkipReason()) {
    GTEST_SKIP() << *why;
  }
  ASSERT_EQ(::chmod(dir_.c_str(), 01777), 0);  // like /tmp
  const std::string elsewhere = dir_ + "/elsewhere.db";
  ASSERT_EQ(RunAsNobody([&] { return ::symlink(elsewhere.c_str(), path_.c_str()) == 0 ? 0 : 1; }),
            0);
  Result<std::unique_ptr<SqliteStore>> linked = SqliteStore::Open(path_);
  EXPECT_FALSE(linked.ok());
  EXPECT_FALSE(std::filesystem::exists(elsewhere)) << "the link was followed";
  ASSERT_EQ(::unlink(path_.c_str()), 0);

  ASSERT_EQ(RunAsNobody([&] {
              int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
              return fd >= 0 && ::close(fd) == 0 ? 0 : 1;
            }),
            0);
  Result<std::unique_ptr<SqliteStore>> planted = SqliteStore::Open(path_);
  EXPECT_FALSE(planted.ok());
  EXPECT_EQ(planted.status().code(), StatusCode::kFailedPrecondition) << planted.status().ToString();
  EXPECT_NE(planted.status().message().find("uid"), std::string::npos) << planted.status().ToString();
  ASSERT_EQ(::unlink(path_.c_str()), 0);

  // One of this user's, but that its group or others may write, is no better.
  ASSERT_EQ(::close(::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600)), 0);
  ASSERT_EQ(::chmod(path_.c_str(), 0666), 0);
  Result<std::unique_ptr<SqliteStore>> open = SqliteStore::Open(path_);
  EXPECT_FALSE(open.ok());
  EXPECT_NE(open.status().message().find("0666"), std::string::npos) << open.status().ToString();
}

}  // namespace
}  // namespace tpufleet
