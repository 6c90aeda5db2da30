// PostgresStateLock: the state lock (app/state_lock.h's STATE/lock) of a fleet whose store
// is on PostgreSQL, where the machines sharing the store do not share a state directory:
// `up`, `down` and `import` on one machine and serve's actions on another must not
// change the fleet at once.
//
// A session-level advisory lock (kStateLockKey) on a connection of its own, held while
// the object lives: the server frees it when the session ends, kill -9 or a lost machine
// included (keepalives, postgres_connect.h). The session's application_name says who
// holds it ("tpufleet up (pid 12 on lab-1)"), so a refusal names the holder, as the
// file lock's does.
//
// Thread-safety: one owner thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "util/status.h"

struct pg_conn;

namespace tpufleet {

/// The advisory lock of the fleet's state: one number in every tpufleet, unlike the
/// leader's (postgres_leader.h), so that serve's leader and a CLI command contend for it
/// only while one of them changes the fleet.
inline constexpr int64_t kStateLockKey = 0x74707573;  // "tpus"

class PostgresStateLock {
 public:
  /// Connects to `url` and takes the lock for `who` ("tpufleet up (pid 12 on lab-1)").
  /// FailedPrecondition naming the holder when another session holds it; connection
  /// errors as PostgresStore::Open's.
  static Result<std::unique_ptr<PostgresStateLock>> Take(const std::string& url,
                                                         const std::string& who);
  ~PostgresStateLock();
  PostgresStateLock(const PostgresStateLock&) = delete;
  PostgresStateLock& operator=(const PostgresStateLock&) = delete;

 private:
  explicit PostgresStateLock(pg_conn* conn) : conn_(conn) {}

  pg_conn* conn_;  // owned; its session holds the lock
};

}  // namespace tpufleet
