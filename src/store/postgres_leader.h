// PostgresLeader: which of several `tpufleet serve` processes on one PostgreSQL store
// leads (runs the reconciler); the others serve the read API from the store and take
// over when the leader goes.
//
// The leader holds a session-level advisory lock (pg_try_advisory_lock(kLeaderLockKey))
// on a connection of its own, not the store's. Chosen over a lease row with an expiry:
//  - The lock lives exactly as long as the leader's session. When the process dies
//    (kill -9, a crash, the machine), its socket closes and the server frees the lock at
//    once; a follower polling every kLeaderPoll takes over within that. A lease must
//    wait out its whole expiry, and is only safe if the leader stops acting before its
//    lease ends, which a paused process or a skewed clock breaks.
//  - A leader cut off from the server (a partition) is found out by TCP keepalives on
//    both sides (kKeepalive…: about 15 s); the server then ends the session and frees the
//    lock, and the leader, whose next check of its connection fails (StillLeading),
//    stops. Until it does, a create both might send is still made once: it carries the
//    request id the store recorded (store.h), which the API answers with the first
//    request's operation.
// On SQLite there is no election: one serve per state dir (STATE/serve.lock).
//
// Thread-safety: one owner thread (serve's loop).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "util/status.h"

struct pg_conn;

namespace tpufleet {

/// How often a follower tries to take the lead, and the leader checks it still holds it.
inline constexpr std::chrono::seconds kLeaderPoll{2};
/// The advisory lock the leading serve holds for its life: a fixed number, the same in
/// every tpufleet, so that every serve on one database contends for it.
inline constexpr int64_t kLeaderLockKey = 0x7470756c6472;  // "tpuldr"

class PostgresLeader {
 public:
  /// Connects to `url` (a connection of the leader's own). Errors as PostgresStore::Open's.
  static Result<std::unique_ptr<PostgresLeader>> Open(const std::string& url);
  ~PostgresLeader();
  PostgresLeader(const PostgresLeader&) = delete;
  PostgresLeader& operator=(const PostgresLeader&) = delete;

  /// Takes the lead if no other serve holds it: true when this process leads (now or
  /// already). Unavailable when the connection is lost (this process does not lead).
  Result<bool> TryLead();
  /// Whether this process still leads: it took the lead and its session is alive (a
  /// round trip on it succeeds). Once false, it stays false: the lock went with the
  /// session, and another serve may lead already.
  bool StillLeading();

 private:
  explicit PostgresLeader(pg_conn* conn) : conn_(conn) {}

  pg_conn* conn_;  // owned
  bool leading_ = false;
  bool lost_ = false;
};

}  // namespace tpufleet
