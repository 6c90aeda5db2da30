// PostgresStore's URL handling: what messages show of a URL, and what a server that
// cannot be reached looks like. The store's behaviour on a server is store_test.cc's.
#include "store/postgres_store.h"

#include <gtest/gtest.h>

#include "util/testing/temp_dir.h"

namespace tpufleet {
namespace {

TEST(PostgresUrlTest, MessagesShowTheUserHostAndDatabaseButNeverThePassword) {
  EXPECT_EQ(RedactedPostgresUrl("postgresql://lab:s3cret@db.example:5433/fleet?sslmode=require"),
            "postgresql://lab@db.example:5433/fleet");
  EXPECT_EQ(RedactedPostgresUrl("postgresql:///fleet?host=/run/pg&password=s3cret"),
            "postgresql:///fleet?host=/run/pg");
  EXPECT_EQ(RedactedPostgresUrl("postgresql://%zz"), "");
}

TEST(PostgresUrlTest, APasswordInTheUrlIsSeen) {
  EXPECT_TRUE(PostgresUrlHasPassword("postgresql://lab:s3cret@db.example/fleet"));
  EXPECT_TRUE(PostgresUrlHasPassword("postgresql:///fleet?host=/run/pg&password=s3cret"));
  EXPECT_FALSE(PostgresUrlHasPassword("postgresql://lab@db.example/fleet"));
}

TEST(PostgresUrlTest, AServerThatIsNotThereIsUnavailableAndNamed) {
  TempDir nowhere;  // a socket directory with no server in it
  Result<std::unique_ptr<PostgresStore>> s =
      PostgresStore::Open("postgresql://lab:s3cret@/fleet?host=" + nowhere.path());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(s.status().message().find("postgresql://lab@/fleet?host=" + nowhere.path()),
            std::string::npos)
      << s.status().message();
  EXPECT_EQ(s.status().message().find("s3cret"), std::string::npos) << s.status().message();
}

}  // namespace
}  // namespace tpufleet
