// PostgresLeader on the test server: one leader at a time, the lead passes on when the
// leader's session ends, and a leader whose session the server ended knows it.
#include "store/postgres_leader.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "store/testing/postgres_server.h"

namespace tpufleet {
namespace {

class PostgresLeaderTest : public ::testing::Test {
 protected:
  void SetUp() override { TestDatabase(&server_, &database_); }

  std::unique_ptr<PostgresLeader> Open() {
    Result<std::unique_ptr<PostgresLeader>> l = PostgresLeader::Open(server_->Url(database_));
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    return l.ok() ? std::move(*l) : nullptr;
  }

  // Whether `l` leads within ten seconds. A session's locks are let go a moment after it
  // ends (its backend exits after the client has gone): `l` tries again, as a follower
  // serve does.
  static bool TakesTheLead(PostgresLeader& l) {
    for (int i = 0; i < 200; ++i) {
      if (Result<bool> took = l.TryLead(); took.ok() && *took) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  PostgresServer* server_ = nullptr;
  std::string database_;
};

TEST_F(PostgresLeaderTest, OneLeadsAndTheNextTakesOverWhenItGoes) {
  auto a = Open();
  auto b = Open();
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(*a->TryLead());
  EXPECT_TRUE(*a->TryLead()) << "leading already";
  EXPECT_FALSE(*b->TryLead());
  EXPECT_FALSE(b->StillLeading());
  EXPECT_TRUE(a->StillLeading());
  a.reset();  // its session ends, as a killed serve's does
  EXPECT_TRUE(TakesTheLead(*b));
}

TEST_F(PostgresLeaderTest, ALeaderWhoseSessionEndedKnowsItNoLongerLeads) {
  auto a = Open();
  ASSERT_TRUE(a);
  ASSERT_TRUE(*a->TryLead());
  // The server ends the session (a partition found out, an admin): the lock goes with it.
  ASSERT_EQ(server_->Psql(database_,
                          "SELECT pg_terminate_backend(pid) FROM pg_locks "
                          "WHERE locktype = 'advisory' AND pid <> pg_backend_pid()"),
            0);
  EXPECT_FALSE(a->StillLeading());
  Result<bool> again = a->TryLead();
  EXPECT_FALSE(again.ok() && *again) << "a lost lead is not taken again";
  auto b = Open();
  EXPECT_TRUE(TakesTheLead(*b));
}

}  // namespace
}  // namespace tpufleet
