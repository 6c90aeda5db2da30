// Where the state store is (--store, TPUFLEET_STORE, STATE/state.db), the password rule
// for argv, and opening each backend through OpenStore.
#include "app/state_store.h"

#include <gtest/gtest.h>

#include "store/testing/postgres_server.h"
#include "util/testing/temp_dir.h"

namespace tpufleet::app {
namespace {

const std::map<std::string, std::string> kNoEnv;

TEST(FindStoreTest, TheDefaultIsTheStateDirsFile) {
  Result<StoreLocation> w = FindStore(std::nullopt, kNoEnv, "/s");
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE(w->postgres);
  EXPECT_EQ(w->target, "/s/state.db");
}

TEST(FindStoreTest, ASqlitePathWithOrWithoutItsScheme) {
  EXPECT_EQ(FindStore(std::string("sqlite:/data/fleet.db"), kNoEnv, "/s")->target,
            "/data/fleet.db");
  EXPECT_EQ(FindStore(std::string("/data/fleet.db"), kNoEnv, "/s")->target, "/data/fleet.db");
  EXPECT_EQ(FindStore(std::string("sqlite:"), kNoEnv, "/s").status().code(),
            StatusCode::kInvalidArgument);
}

TEST(FindStoreTest, TheFlagWinsOverTheEnvironment) {
  std::map<std::string, std::string> env{{kStoreEnv, "postgresql://lab@db/fleet"}};
  Result<StoreLocation> from_env = FindStore(std::nullopt, env, "/s");
  ASSERT_TRUE(from_env.ok());
  EXPECT_TRUE(from_env->postgres);
  EXPECT_EQ(from_env->shown, "postgresql://lab@db/fleet");
  EXPECT_EQ(FindStore(std::string("sqlite:/x.db"), env, "/s")->target, "/x.db");
}

// argv is readable by every user (ps): a password there is refused, with where to put it.
TEST(FindStoreTest, APasswordInTheFlagIsRefusedButNotInTheEnvironment) {
  Result<StoreLocation> flag =
      FindStore(std::string("postgresql://lab:s3cret@db:5432/fleet"), kNoEnv, "/s");
  ASSERT_EQ(flag.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(flag.status().message().find("pgpass"), std::string::npos);
  EXPECT_NE(flag.status().message().find("TPUFLEET_STORE"), std::string::npos);
  EXPECT_NE(flag.status().message().find("postgresql://lab@db:5432/fleet"), std::string::npos);
  EXPECT_EQ(flag.status().message().find("s3cret"), std::string::npos);

  std::map<std::string, std::string> env{{kStoreEnv, "postgresql://lab:s3cret@db/fleet"}};
  Result<StoreLocation> from_env = FindStore(std::nullopt, env, "/s");
  ASSERT_TRUE(from_env.ok());
  EXPECT_EQ(from_env->shown.find("s3cret"), std::string::npos);
}

TEST(OpenStoreTest, OpensASqliteFile) {
  TempDir tmp;
  Result<std::unique_ptr<Store>> s = OpenStore(*FindStore(std::nullopt, kNoEnv, tmp.path()));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE((*s)->Nodes("")->empty());
}

TEST(OpenStoreTest, OpensAPostgresDatabaseGivenByUrl) {
  PostgresServer* server = nullptr;
  std::string db;
  TestDatabase(&server, &db);
  if (server == nullptr) {
    return;  // skipped, or failed to make the database
  }
  Result<StoreLocation> where = FindStore(server->Url(db), kNoEnv, "/s");
  ASSERT_TRUE(where.ok()) << where.status().ToString();
  Result<std::unique_ptr<Store>> s = OpenStore(*where);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE((*s)->Nodes("")->empty());
}

}  // namespace
}  // namespace tpufleet::app
