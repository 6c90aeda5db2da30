// PostgresStateLock on the test server: one holder at a time, a refusal names it, and the
// lock is free again once the holder's session ends.
#include "store/postgres_lock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "store/postgres_leader.h"
#include "store/testing/postgres_server.h"

namespace tpufleet {
namespace {

class PostgresStateLockTest : public ::testing::Test {
 protected:
  void SetUp() override { TestDatabase(&server_, &database_); }

  PostgresServer* server_ = nullptr;
  std::string database_;
};

TEST_F(PostgresStateLockTest, OneHolderAtATimeAndARefusalNamesIt) {
  Result<std::unique_ptr<PostgresStateLock>> up =
      PostgresStateLock::Take(server_->Url(database_), "tpufleet up (pid 12 on lab-1)");
  ASSERT_TRUE(up.ok()) << up.status().ToString();

  Result<std::unique_ptr<PostgresStateLock>> serve =
      PostgresStateLock::Take(server_->Url(database_), "tpufleet serve (pid 7 on lab-2)");
  ASSERT_FALSE(serve.ok());
  EXPECT_EQ(serve.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(serve.status().message(),
            "`tpufleet up (pid 12 on lab-1)` is changing the fleet (it holds the state lock of "
            "the PostgreSQL store); wait for it to finish");

  up->reset();  // up ends (or is killed): its session, and the lock, go
  // The server lets go of a session's locks a moment after the client has gone.
  Result<std::unique_ptr<PostgresStateLock>> again = FailedPreconditionError("not tried");
  for (int i = 0; i < 200 && !again.ok(); ++i) {
    again = PostgresStateLock::Take(server_->Url(database_), "tpufleet serve (pid 7 on lab-2)");
    if (!again.ok()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  EXPECT_TRUE(again.ok()) << again.status().ToString();
}

TEST_F(PostgresStateLockTest, TheLeadersLockIsAnotherLock) {
  // serve's leader holds its own key for its life; the state lock is free beside it.
  Result<std::unique_ptr<PostgresLeader>> leader = PostgresLeader::Open(server_->Url(database_));
  ASSERT_TRUE(leader.ok()) << leader.status().ToString();
  ASSERT_TRUE(*(*leader)->TryLead());
  EXPECT_TRUE(PostgresStateLock::Take(server_->Url(database_), "tpufleet down").ok());
}

}  // namespace
}  // namespace tpufleet
