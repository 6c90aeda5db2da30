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

#include "store/sql_driver.h"
#include "store/testing/store_backends.h"
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

// Takes today's schema back to version 12 (before the nodes' usage), 11 (before the job
// runs), 10 (before the fleets
// table and the ledger's owners), 8 (before data disks and the team tables) and 6
// (before serve's and users' tables), for the tests that make an older file from today's.
constexpr const char* kDropSinceV12 = "DROP TABLE node_usage; ";
const std::string kToV12 = std::string(kDropSinceV12) + "PRAGMA user_version = 12;";
const std::string kDropSinceV11 = std::string(kDropSinceV12) + "DROP TABLE job_runs; ";
const std::string kToV11 = kDropSinceV11 + "PRAGMA user_version = 11;";
const std::string kDropSinceV10 =
    kDropSinceV11 + "DROP TABLE fleets; ALTER TABLE spend DROP COLUMN owner; ";
const std::string kToV10 = kDropSinceV10 + "PRAGMA user_version = 10;";
const std::string kDropSinceV8 =
    kDropSinceV10 +
    "DROP TABLE tokens; DROP TABLE audit; ALTER TABLE nodes DROP COLUMN data_disks; ";
const std::string kToV8 = kDropSinceV8 + "PRAGMA user_version = 8;";
const std::string kToV6 = kDropSinceV8 +
                          "DROP TABLE users; DROP TABLE serve; DROP TABLE spend; DROP TABLE jobs; "
                          "PRAGMA user_version = 6;";

class SqliteStoreTest : public StoreFixture {
 protected:
  // Makes the file as an older release left it (`older_sql` run on it), opens the store
  // on it (which migrates it) and reads fleet "lab"'s nodes, of which there must be one.
  void OpenMigrated(const std::string& older_sql, std::unique_ptr<SqlStore>* store,
                    std::vector<NodeRecord>* nodes) {
    ASSERT_NO_FATAL_FAILURE(ExecBehindBack(older_sql));
    *store = Open();
    ASSERT_NE(*store, nullptr);
    Result<std::vector<NodeRecord>> lab = (*store)->Nodes("lab");
    ASSERT_TRUE(lab.ok()) << lab.status().ToString();
    ASSERT_EQ(lab->size(), 1u);
    *nodes = std::move(*lab);
  }
};

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
  std::string sql = "EXPLAIN QUERY PLAN " + sql::EventsSql(of_a);
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
  std::unique_ptr<SqlStore> store;
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
  auto reopened = Open();  // migrated once: opening again finds schema 13 and changes nothing
  EXPECT_EQ((*reopened->Nodes("lab"))[0].labels, labelled.labels);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* version = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &version, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(version), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(version, 0), 13);
  sqlite3_finalize(version);
  sqlite3_close(db);
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
  std::unique_ptr<SqlStore> store;
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
  std::unique_ptr<SqlStore> store;
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
  std::unique_ptr<SqlStore> store;
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
// A state file from before data disks (schema 8) opens with none on its nodes.
TEST_F(SqliteStoreTest, Issue15AVersion8FileIsMigratedWithoutDataDisks) {
  {
    auto store = Open();
    ASSERT_TRUE(store->PutNode(Node("old", 1)).ok());
  }
  std::unique_ptr<SqlStore> store;
  std::vector<NodeRecord> nodes;
  ASSERT_NO_FATAL_FAILURE(OpenMigrated(kToV8, &store, &nodes));
  EXPECT_TRUE(nodes[0].data_disks.empty());
  NodeRecord n = nodes[0];
  n.data_disks = {{"projects/p/zones/z/disks/data", "read-only"}};
  ASSERT_TRUE(store->PutNode(n).ok());
  EXPECT_EQ((*store->Nodes("lab"))[0].data_disks, n.data_disks);
}

TEST_F(SqliteStoreTest, Issue17AVersion10FileIsMigratedWithStretchesBilledToNoOne) {
  {
    auto store = Open();
    ASSERT_TRUE(store->PutNode(Node("old", 1)).ok());
    ASSERT_TRUE(store->PutSpend(Stretch("lab", "old", clock_.Now(), std::nullopt)).ok());
  }
  std::unique_ptr<SqlStore> store;
  std::vector<NodeRecord> nodes;
  ASSERT_NO_FATAL_FAILURE(OpenMigrated(kToV10, &store, &nodes));
  Result<std::vector<SpendRecord>> spend = store->Spend("lab", std::nullopt);
  ASSERT_TRUE(spend.ok()) << spend.status().ToString();
  ASSERT_EQ(spend->size(), 1u);
  EXPECT_EQ((*spend)[0].owner, "");
  EXPECT_TRUE(store->Fleets()->empty());
  ASSERT_TRUE(store->PutFleet({"lab", "ada", std::nullopt, 5, clock_.Now()}).ok());
  EXPECT_EQ((*store->Fleets())[0].owner, "ada");
}

TEST_F(SqliteStoreTest, Issue17AVersion11FileIsMigratedWithNoJobRuns) {
  {
    auto store = Open();
    ASSERT_TRUE(store->PutNode(Node("old", 1)).ok());
  }
  std::unique_ptr<SqlStore> store;
  std::vector<NodeRecord> nodes;
  ASSERT_NO_FATAL_FAILURE(OpenMigrated(kToV11, &store, &nodes));
  ASSERT_EQ(nodes.size(), 1u);
  Result<std::vector<JobRunRecord>> runs = store->JobRuns("", std::nullopt);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  EXPECT_TRUE(runs->empty());
  ASSERT_TRUE(
      store->PutJobRun({"lab", "old", "jabc1234", "train", "ada", "", clock_.Now(), std::nullopt})
          .ok());
  EXPECT_EQ((*store->JobRuns("lab", std::nullopt))[0].person, "ada");
}

TEST_F(SqliteStoreTest, Issue17AVersion12FileIsMigratedWithNoUsage) {
  {
    auto store = Open();
    ASSERT_TRUE(store->PutNode(Node("old", 1)).ok());
  }
  std::unique_ptr<SqlStore> store;
  std::vector<NodeRecord> nodes;
  ASSERT_NO_FATAL_FAILURE(OpenMigrated(kToV12, &store, &nodes));
  ASSERT_EQ(nodes.size(), 1u);
  Result<std::vector<UsageRecord>> usage = store->Usage("", std::nullopt);
  ASSERT_TRUE(usage.ok()) << usage.status().ToString();
  EXPECT_TRUE(usage->empty());
  Clock::WallTime hour = std::chrono::floor<std::chrono::hours>(clock_.Now());
  ASSERT_TRUE(
      store->AddUsage({"lab", "old", "", hour, 30, 0, 0, 30, hour + std::chrono::seconds(30)})
          .ok());
  EXPECT_EQ((*store->Usage("lab", std::nullopt))[0].idle_seconds, 30);
}

TEST_F(SqliteStoreTest, Issue12AVersion5FileIsMigratedWithoutInternalAddresses) {
  {
    auto store = Open();
    NodeRecord n = Node("old", 1);
    n.workers[0].internal_address = "10.0.0.2";
    ASSERT_TRUE(store->PutNode(n).ok());
  }
  std::unique_ptr<SqlStore> store;
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

// A schema-6 file (from before serve) opens with empty jobs, spend and serve tables,
// its nodes kept, and the new tables take writes.
TEST_F(SqliteStoreTest, AVersion6FileIsMigratedWithNothingServeKept) {
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
  ASSERT_EQ(sqlite3_exec(db, kToV6.c_str(),
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
}  // namespace
}  // namespace tpufleet
