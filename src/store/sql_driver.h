// sql::Driver: what SqlStore (sql_store.h) needs of a database, so that the store's SQL,
// schema steps and row mapping are written once for SQLite and PostgreSQL. A driver
// runs statements written in one portable dialect: parameters are ?1, ?2, … (the
// PostgreSQL driver rewrites them to $1, $2, …), upserts are INSERT … ON CONFLICT (key)
// DO UPDATE, new ids come back through RETURNING, and the schema steps are SQLite's
// DDL, which Ddl() turns into the driver's own types. Private to store/; no SQLite or
// libpq type leaves the module.
//
// Thread-safety: none; SqlStore holds its mutex around every call.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "store/store.h"
#include "util/clock.h"
#include "util/status.h"

namespace tpufleet::sql {

/// A wall time is stored as microseconds since the epoch.
inline int64_t ToMicros(Clock::WallTime t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}
inline Clock::WallTime FromMicros(int64_t us) {
  return Clock::WallTime(
      std::chrono::duration_cast<Clock::WallTime::duration>(std::chrono::microseconds(us)));
}

/// A parameter or a column: NULL, an integer, a real or text.
using Value = std::variant<std::monostate, int64_t, double, std::string>;

/// How a C++ argument is bound: text as text; a bool, an integer or a wall time (in
/// microseconds) as an integer; a double as a real; an optional wall time as one, or NULL.
template <typename T>
Value ToValue(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return int64_t{v ? 1 : 0};
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<int64_t>(v);
  } else if constexpr (std::is_same_v<T, Clock::WallTime>) {
    return ToMicros(v);
  } else if constexpr (std::is_same_v<T, double>) {
    return v;
  } else if constexpr (std::is_same_v<T, std::optional<Clock::WallTime>>) {
    return v ? Value(ToMicros(*v)) : Value();
  } else {
    return std::string(std::string_view(v));
  }
}

/// One row of a result. A driver that reads every column as text (PostgreSQL) gives
/// strings; the accessors convert, so the row mapping is the same for every driver.
class Row {
 public:
  explicit Row(std::vector<Value> columns) : columns_(std::move(columns)) {}

  bool IsNull(int col) const;
  std::string Text(int col) const;  // "" for NULL
  int64_t Int(int col) const;       // 0 for NULL
  double Double(int col) const;
  Clock::WallTime Time(int col) const { return FromMicros(Int(col)); }
  /// A time column that may be NULL.
  std::optional<Clock::WallTime> OptionalTime(int col) const {
    return IsNull(col) ? std::nullopt : std::optional<Clock::WallTime>(Time(col));
  }

 private:
  std::vector<Value> columns_;
};

/// What a transaction is for: reads only, writes (the write lock at once, on SQLite),
/// or the schema (creating and migrating it, with the migration lock on PostgreSQL).
enum class TxKind { kRead, kWrite, kSchema };

class Driver {
 public:
  Driver() = default;
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;
  virtual ~Driver() = default;

  /// Starts a transaction of `kind`. Reads and writes get SERIALIZABLE isolation (what
  /// SQLite gives every transaction); kSchema also waits for any other process's
  /// migration to end, so that two processes opening one new store cannot both create it.
  virtual Status Begin(TxKind kind) = 0;
  /// Runs `sql`, one or more statements without parameters (COMMIT, ROLLBACK, a schema
  /// step in this driver's dialect).
  virtual Status Exec(const std::string& sql) = 0;
  /// Runs one statement with `params` bound to ?1, ?2, … and returns its rows.
  virtual Result<std::vector<Row>> Query(std::string_view sql,
                                         const std::vector<Value>& params) = 0;
  /// The schema version the store carries (0: a new, empty store), and setting it.
  /// REQUIRES: inside a kSchema transaction.
  virtual Result<int64_t> SchemaVersion() = 0;
  virtual Status SetSchemaVersion(int64_t version) = 0;
  /// A schema step, written in SQLite's DDL, in this driver's dialect.
  virtual std::string Ddl(std::string_view sqlite_ddl) const = 0;
  /// Whether a statement since the last Begin failed on a serialization conflict with
  /// another process's transaction: the whole transaction may succeed if run again.
  virtual bool conflicted() const = 0;
};

/// SqlStore::Events' statement for `query`: only the filters it sets are in its WHERE
/// (binding ?1 fleet, ?2 node, ?3 kind, ?4 since, ?5 limit), so that a node's events
/// are read through the index events_by_node. One statement for every filter, "(?1 = ''
/// OR fleet = ?1)", cannot use the index: serve's pass, which reads each node's recent
/// events, then scanned the whole table once per node (at 256 nodes, most of its CPU,
/// and growing with the history).
std::string EventsSql(const EventQuery& query);

/// A column holding a JSON array of strings (nlohmann::json(vector).dump()); Internal,
/// naming `what` ("the serve record's fleets"), when it is anything else.
Result<std::vector<std::string>> StringsFromJson(const std::string& text, std::string_view what);

/// "INSERT INTO table (c1, …) VALUES (?1, …) ON CONFLICT (key…) DO UPDATE SET c = excluded.c
/// …": an insert that replaces the row with the same key, in the dialect both drivers
/// speak. `columns` starts with the key's `key_columns` columns.
std::string UpsertSql(std::string_view table, const std::vector<std::string_view>& columns,
                      size_t key_columns);

/// A T of each of `rows`, made by `row` (a Result<T>(const Row&)), stopping at the first
/// error.
template <typename T, typename RowFn>
Result<std::vector<T>> MapRows(const std::vector<Row>& rows, const RowFn& row) {
  std::vector<T> out;
  out.reserve(rows.size());
  for (const Row& r : rows) {
    TPUFLEET_ASSIGN_OR_RETURN(T t, row(r));
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace tpufleet::sql
