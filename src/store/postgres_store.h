// PostgresStore: the Store (sql_store.h) on a PostgreSQL server, for a lab whose team
// server must survive the loss of a machine: several `tpufleet serve` processes on
// several machines share one database.
//
// The URL is libpq's: postgresql://user@host:port/db, or postgresql:///db?host=/socket/dir
// for a unix socket. libpq reads a password from PGPASSFILE or ~/.pgpass (or the URL,
// which must then not come from argv: see docs/security.md). The tables are the SQLite
// store's, in PostgreSQL's types (BIGINT for integers and times, DOUBLE PRECISION for
// prices, TEXT with the "C" collation so that names sort by byte as on SQLite); the
// schema version lives in the table tpufleet_schema, and a migration holds a
// transaction-scoped advisory lock, so that two processes opening one new database at
// once migrate it once. Every transaction is SERIALIZABLE and is run again when it loses
// a conflict (sql_store.h). A lost connection is made again at the next transaction.
//
// Thread-safety: as SqlStore's.
#pragma once

#include <memory>
#include <string>

#include "store/sql_store.h"

namespace tpufleet {

class PostgresStore final : public SqlStore {
 public:
  /// Connects to `url` and creates or migrates the schema. Unavailable when the server
  /// cannot be reached, PermissionDenied when it refuses the user; messages name the
  /// host and database, never the password.
  static Result<std::unique_ptr<PostgresStore>> Open(const std::string& url);

 private:
  using SqlStore::SqlStore;
};

/// The URL as messages and logs may show it: scheme, user, host, port and database,
/// without a password or other parameters; "" when libpq cannot parse it.
std::string RedactedPostgresUrl(const std::string& url);

/// Whether libpq would read a password from the URL itself (postgresql://u:PW@h/db or
/// ?password=PW).
bool PostgresUrlHasPassword(const std::string& url);

/// The advisory lock key a migration holds (pg_advisory_xact_lock): a fixed number, the
/// same in every tpufleet, so that every process on one database contends for it.
inline constexpr int64_t kMigrationLockKey = 0x7470756d6967;  // "tpumig"

}  // namespace tpufleet
