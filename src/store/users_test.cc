// The store's users table (issue 16), on SQLite and PostgreSQL: collaborators
// round-trip, are replaced by their key and deleted; a schema-7 SQLite file is migrated
// with none.
#include <gtest/gtest.h>

#include <chrono>

#include <sqlite3.h>

#include "store/testing/store_backends.h"

namespace tpufleet {
namespace {

class UsersTableTest : public StoreTest {
 protected:
  UserRecord User(std::string fleet, std::string name) {
    UserRecord u;
    u.fleet = std::move(fleet);
    u.name = std::move(name);
    u.keys = {"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx5 " + u.name + "@laptop"};
    u.created_at = clock_.Now();
    u.updated_at = clock_.Now();
    return u;
  }
};

// What only SQLite has: files that older releases wrote.
class SqliteUsersTableTest : public UsersTableTest {};

TEST_P(UsersTableTest, UsersRoundTripAreReplacedByTheirKeyAndDeleted) {
  auto store = Open();
  UserRecord milo = User("lab", "milo");
  milo.nodes = {"trainer", "team=a,role=x"};
  milo.role = "viewer";
  ASSERT_TRUE(store->PutUser(milo).ok());
  ASSERT_TRUE(store->PutUser(User("lab", "ada")).ok());
  ASSERT_TRUE(store->PutUser(User("other", "milo")).ok());

  milo.sudo = true;
  milo.keys.push_back("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ second");
  milo.updated_at = clock_.Now() + std::chrono::minutes(5);
  ASSERT_TRUE(store->PutUser(milo).ok());

  Result<std::vector<UserRecord>> lab = store->Users("lab");
  ASSERT_TRUE(lab.ok()) << lab.status().ToString();
  ASSERT_EQ(lab->size(), 2u);
  EXPECT_EQ((*lab)[0].name, "ada");  // ordered by name
  EXPECT_EQ((*lab)[0].role, "member");
  EXPECT_FALSE((*lab)[0].sudo);
  EXPECT_TRUE((*lab)[0].nodes.empty());
  const UserRecord& back = (*lab)[1];
  EXPECT_EQ(back.fleet, "lab");
  EXPECT_EQ(back.name, "milo");
  EXPECT_EQ(back.keys, milo.keys);
  EXPECT_TRUE(back.sudo);
  EXPECT_EQ(back.nodes, milo.nodes);
  EXPECT_EQ(back.role, "viewer");
  EXPECT_EQ(back.created_at, milo.created_at);
  EXPECT_EQ(back.updated_at, milo.updated_at);
  EXPECT_EQ(store->Users("")->size(), 3u);

  ASSERT_TRUE(store->DeleteUser("lab", "milo").ok());
  ASSERT_TRUE(store->DeleteUser("lab", "nobody").ok());  // absent: OK
  ASSERT_EQ(store->Users("lab")->size(), 1u);
  EXPECT_EQ((*store->Users("other"))[0].name, "milo");  // another fleet's milo stays
}

// Writes to users join a transaction: a body that fails leaves no user behind.
TEST_P(UsersTableTest, AFailedTransactionAddsNoUser) {
  auto store = Open();
  Status s = store->Transaction([&]() -> Status {
    TPUFLEET_TRY(store->PutUser(User("lab", "milo")));
    return InvalidArgumentError("changed my mind");
  });
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(store->Users("lab")->empty());
}

// A schema-7 file (from before users) opens with no users, and the table takes writes.
TEST_P(SqliteUsersTableTest, AVersion7FileIsMigratedWithNoUsers) {
  {
    auto store = Open();
    ASSERT_TRUE(store
                    ->PutJob(JobRecord{"lab", "n", "j-1", "train", "{}", "on-preemption", 3, 0,
                                       "active", "", clock_.Now(), clock_.Now()})
                    .ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(
                db,
                "ALTER TABLE nodes DROP COLUMN data_disks; DROP TABLE users; "
                "DROP TABLE tokens; DROP TABLE audit; DROP TABLE fleets; "
                "ALTER TABLE spend DROP COLUMN owner; DROP TABLE job_runs; DROP TABLE node_usage; "
                "PRAGMA user_version = 7;",
                nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);

  auto store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->Users("")->empty());
  EXPECT_EQ(store->Jobs("lab")->size(), 1u);
  ASSERT_TRUE(store->PutUser(User("lab", "milo")).ok());
  EXPECT_EQ(store->Users("lab")->size(), 1u);
}

// A keys column that is not a JSON array of strings (a file edited by hand) is an
// Internal error naming the user, not a crash or an account with no key.
TEST_P(UsersTableTest, AHandEditedKeysColumnIsAnError) {
  {
    auto store = Open();
    ASSERT_TRUE(store->PutUser(User("lab", "milo")).ok());
  }
  ASSERT_NO_FATAL_FAILURE(ExecBehindBack("UPDATE users SET keys = '{\"a\":1}'"));
  auto store = Open();
  Result<std::vector<UserRecord>> users = store->Users("lab");
  ASSERT_EQ(users.status().code(), StatusCode::kInternal);
  EXPECT_NE(users.status().message().find("milo"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Backends, UsersTableTest, ::testing::ValuesIn(kStoreBackends),
                         StoreBackendName);
INSTANTIATE_TEST_SUITE_P(File, SqliteUsersTableTest, ::testing::Values(StoreBackend::kSqlite),
                         StoreBackendName);

}  // namespace
}  // namespace tpufleet
