// The state dir's locks as two processes meet them: the second is refused with the
// first one's name and pid, never silently, and a released lock is free again.
#include "app/state_lock.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include "store/testing/postgres_server.h"
#include "util/testing/temp_dir.h"
#include "util/file.h"

namespace tpufleet::app {
namespace {

// flock(2) locks belong to an open file description, so a second open in this process
// is refused as another process would be.
TEST(StateLock, TheRefusalNamesTheHolder) {
  TempDir dir;
  std::string pid = std::to_string(::getpid());
  Result<UniqueFd> up = LockStateDir(dir.path(), "up");
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  EXPECT_EQ(*ReadFile(dir.path() + "/lock"), pid + " up\n");

  StateDirLocker serve(dir.path(), "serve", "");
  Result<StateHold> refused = serve.TryLock();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.status().message(), "`tpufleet up` (pid " + pid +
                                            ") is changing the fleet (it holds " + dir.path() +
                                            "/lock); wait for it to finish");

  up->Reset();
  Result<StateHold> taken = serve.TryLock();
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
  Result<UniqueFd> refused_up = LockStateDir(dir.path(), "up");
  ASSERT_FALSE(refused_up.ok());
  EXPECT_NE(refused_up.status().message().find("`tpufleet serve` (pid " + pid +
                                            ") is changing the fleet"),
            std::string::npos)
      << refused_up.status().message();
}

// Two machines sharing one PostgreSQL store have a state dir each: the store's lock keeps
// them apart, and names the holder.
TEST(StateLock, OnAPostgresStoreTwoStateDirsAreKeptApart) {
  PostgresServer* server = nullptr;
  std::string db;
  TestDatabase(&server, &db);
  if (server == nullptr) {
    return;  // skipped (the reason counted by TestDatabase), or failed to make the database
  }
  TempDir here, there;
  Result<StateHold> up = LockState(here.path(), "up", server->Url(db));
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  Result<StateHold> down = LockState(there.path(), "down", server->Url(db));
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(down.status().message().rfind("`tpufleet up (pid " + std::to_string(::getpid()) +
                                              " on ",
                                          0),
            0u)
      << down.status().message();
  // Refused by the store, it holds nothing: the other dir's file lock is free again.
  EXPECT_TRUE(LockStateDir(there.path(), "down").ok());
}

TEST(StateLock, OneServePerState) {
  TempDir dir;
  Result<UniqueFd> first = LockServe(dir.path());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  Result<UniqueFd> second = LockServe(dir.path());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().message(), "tpufleet serve (pid " + std::to_string(::getpid()) +
                                           ") is already keeping this state (" + dir.path() +
                                           "/serve.lock)");
  EXPECT_TRUE(LockStateDir(dir.path(), "up").ok()) << "serve.lock is not STATE/lock";
}

TEST(StateLock, AHolderThatSaysNothingIsAnotherCommand) {
  TempDir dir;
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/lock", "garbage that is not a holder\n", 0600).ok());
  Result<UniqueFd> first = LockStateDir(dir.path(), "down");
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(::ftruncate(first->get(), 0), 0);  // as a tpufleet from before the files named it
  Result<UniqueFd> second = LockStateDir(dir.path(), "up");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().message().rfind("another tpufleet command is changing the fleet", 0),
            0u)
      << second.status().message();
}

}  // namespace
}  // namespace tpufleet::app
