// StoreTest: a value-parameterized fixture that runs one store test against each backend,
// SQLite (a file in a temp dir) and PostgreSQL (a fresh database on the binary's
// PostgresServer). The PostgreSQL instance of a test skips, with the reason, where
// Debian's server binaries are absent. Also the sample records the store tests write.
//
//   INSTANTIATE_TEST_SUITE_P(Backends, MyTest, ::testing::ValuesIn(kStoreBackends),
//                            StoreBackendName);
//
// Thread-safety: a test fixture; its test's thread only.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include <sqlite3.h>

#include "store/postgres_store.h"
#include "store/sqlite_store.h"
#include "store/testing/postgres_server.h"
#include "util/testing/fake_clock.h"
#include "util/testing/temp_dir.h"

namespace tpufleet {

enum class StoreBackend { kSqlite, kPostgres };
inline constexpr StoreBackend kStoreBackends[] = {StoreBackend::kSqlite, StoreBackend::kPostgres};

/// The test name suffix of a backend: Sqlite, Postgres.
inline std::string StoreBackendName(const ::testing::TestParamInfo<StoreBackend>& info) {
  return info.param == StoreBackend::kSqlite ? "Sqlite" : "Postgres";
}

/// The fixture on one backend; StoreTest runs a test on each.
class StoreFixture : public ::testing::Test {
 protected:
  explicit StoreFixture(StoreBackend backend = StoreBackend::kSqlite) : backend_(backend) {}

  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    dir_ = tmp_.path();
    path_ = tmp_.Path("state.db");
    if (postgres()) {
      TestDatabase(&server_, &database_);
    }
  }

  bool postgres() const { return backend_ == StoreBackend::kPostgres; }

  /// Where the store is: the SQLite file, or the PostgreSQL database's URL.
  std::string Location() const { return postgres() ? server_->Url(database_) : path_; }

  /// Opens the test's store; a failure is a test failure (and nullptr).
  std::unique_ptr<SqlStore> Open() {
    Result<std::unique_ptr<SqlStore>> s = TryOpen();
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  Result<std::unique_ptr<SqlStore>> TryOpen() const {
    if (postgres()) {
      TPUFLEET_ASSIGN_OR_RETURN(std::unique_ptr<PostgresStore> s, PostgresStore::Open(Location()));
      return std::unique_ptr<SqlStore>(std::move(s));
    }
    TPUFLEET_ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> s, SqliteStore::Open(path_));
    return std::unique_ptr<SqlStore>(std::move(s));
  }

  /// Runs `sql` on the database behind the store's back, as an older release or an edit
  /// by hand would have written it.
  void ExecBehindBack(const std::string& sql) {
    if (postgres()) {
      ASSERT_EQ(server_->Psql(database_, sql), 0) << "see " << server_->dir() << "/log";
      return;
    }
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
    std::string error = sqlite3_errmsg(db);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << error;
  }

  /// Node `name` of fleet "lab": a READY spot v4-32 with `workers` workers, worker 0 set up.
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

  /// Job `id` of fleet "lab" on `node`, restarted on preemption up to 3 times.
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

  /// A spend stretch of a READY spot v4-8 at $2.25/h.
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

  const StoreBackend backend_;
  FakeClock clock_;
  TempDir tmp_;
  std::string dir_;
  std::string path_;  // the SQLite file
  PostgresServer* server_ = nullptr;
  std::string database_;  // on server_
};

class StoreTest : public StoreFixture, public ::testing::WithParamInterface<StoreBackend> {
 protected:
  StoreTest() : StoreFixture(GetParam()) {}
};

}  // namespace tpufleet
