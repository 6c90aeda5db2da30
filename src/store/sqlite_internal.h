// What sqlite_store.cc and sqlite_serve_tables.cc share: the time encoding, the error
// mapping and the statement helpers every read and write goes through. Private to
// store/; no SQLite type leaves the module.
//
// Thread-safety: none of its own; callers hold SqliteStore's mutex.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <sqlite3.h>

#include "store/store.h"
#include "util/clock.h"
#include "util/status.h"

namespace tpufleet::sqlite_internal {

/// A wall time is stored as microseconds since the epoch.
inline int64_t ToMicros(Clock::WallTime t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}
inline Clock::WallTime FromMicros(int64_t us) {
  return Clock::WallTime(
      std::chrono::duration_cast<Clock::WallTime::duration>(std::chrono::microseconds(us)));
}

/// The connection's last error as a Status, classified by what the caller does next.
inline Status SqliteError(sqlite3* db, std::string_view what) {
  int code = sqlite3_errcode(db);
  std::string m = "state store: " + std::string(what) + ": " + sqlite3_errmsg(db);
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED) {
    return UnavailableError(m + " (another tpufleet is writing; try again)");
  }
  if (code == SQLITE_CANTOPEN || code == SQLITE_PERM || code == SQLITE_READONLY) {
    return PermissionDeniedError(m);
  }
  return InternalError(m);
}

/// SqliteStore::Events' statement for `query`: only the filters it sets are in its WHERE
/// (binding ?1 fleet, ?2 node, ?3 kind, ?4 since, ?5 limit), so that a node's events
/// are read through the index events_by_node. One statement for every filter, "(?1 = ''
/// OR fleet = ?1)", cannot use the index: serve's pass, which reads each node's recent
/// events, then scanned the whole table once per node (at 256 nodes, most of its CPU,
/// and growing with the history).
std::string EventsSql(const EventQuery& query);

/// A prepared statement, finalized on scope exit. Bind* take 1-based positions.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Status prepared() const {
    return rc_ == SQLITE_OK ? Status::Ok() : SqliteError(db_, "preparing a statement");
  }
  /// Binds `v` to ?i: text as text; a bool, an integer or a wall time (in microseconds)
  /// as an integer; a double as a real; an optional wall time as one, or NULL.
  template <typename T>
  void Bind(int i, const T& v) {
    if constexpr (std::is_same_v<T, bool>) {
      sqlite3_bind_int64(stmt_, i, v ? 1 : 0);
    } else if constexpr (std::is_integral_v<T>) {
      sqlite3_bind_int64(stmt_, i, static_cast<int64_t>(v));
    } else if constexpr (std::is_same_v<T, Clock::WallTime>) {
      sqlite3_bind_int64(stmt_, i, ToMicros(v));
    } else if constexpr (std::is_same_v<T, double>) {
      sqlite3_bind_double(stmt_, i, v);
    } else if constexpr (std::is_same_v<T, std::optional<Clock::WallTime>>) {
      if (v) {
        sqlite3_bind_int64(stmt_, i, ToMicros(*v));
      } else {
        sqlite3_bind_null(stmt_, i);
      }
    } else {
      std::string_view s = v;
      sqlite3_bind_text(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    }
  }
  /// Binds `args` to ?1, ?2, … in order.
  template <typename... Args>
  void BindAll(const Args&... args) {
    int i = 1;
    (Bind(i++, args), ...);
  }
  /// true: a row is ready; false: done. Errors come back through `status`.
  bool Step(Status* status) {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) {
      return true;
    }
    if (rc != SQLITE_DONE) {
      *status = SqliteError(db_, "running a statement");
    }
    return false;
  }
  Status Run() {
    Status s;
    while (Step(&s)) {
    }
    return s;
  }
  std::string Text(int col) const {
    const unsigned char* t = sqlite3_column_text(stmt_, col);
    return t ? std::string(reinterpret_cast<const char*>(t),
                           static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Double(int col) const { return sqlite3_column_double(stmt_, col); }
  Clock::WallTime Time(int col) const { return FromMicros(Int(col)); }
  /// A time column that may be NULL.
  std::optional<Clock::WallTime> OptionalTime(int col) const {
    if (sqlite3_column_type(stmt_, col) == SQLITE_NULL) {
      return std::nullopt;
    }
    return Time(col);
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

/// The shape of every write: prepare `sql`, bind `args` to ?1, ?2, … in order, run it.
template <typename... Args>
Status RunStatement(sqlite3* db, const char* sql, const Args&... args) {
  Stmt stmt(db, sql);
  TPUFLEET_TRY(stmt.prepared());
  stmt.BindAll(args...);
  return stmt.Run();
}

/// The shape of every read: prepare `sql`, bind `args` to ?1, ?2, … in order, and make
/// a T of each row with `row` (a Result<T>(const Stmt&)), stopping at the first error.
template <typename T, typename Row, typename... Args>
Result<std::vector<T>> SelectAll(sqlite3* db, const char* sql, const Row& row,
                                 const Args&... args) {
  Stmt stmt(db, sql);
  TPUFLEET_TRY(stmt.prepared());
  stmt.BindAll(args...);
  std::vector<T> out;
  Status s;
  while (stmt.Step(&s)) {
    TPUFLEET_ASSIGN_OR_RETURN(T t, row(stmt));
    out.push_back(std::move(t));
  }
  TPUFLEET_TRY(s);
  return out;
}

}  // namespace tpufleet::sqlite_internal
