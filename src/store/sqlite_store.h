// SqliteStore: the Store (sql_store.h) on a SQLite file, by default
// ${XDG_STATE_HOME:-~/.local/state}/tpufleet/state.db: the store for one person.
//
// The file is created 0600 (it names projects and hosts a user may not want others to
// read). WAL journaling and a busy timeout let `status` read while `up` writes, and
// several tpufleet processes share one file safely. The schema carries its version in
// PRAGMA user_version; Open migrates an older file forward and refuses a newer one.
//
// Thread-safety: as SqlStore's.
#pragma once

#include <memory>
#include <string>

#include "store/sql_store.h"

namespace tpufleet {

class SqliteStore final : public SqlStore {
 public:
  /// Opens (creating if needed) the database at `path`; ":memory:" for a private
  /// in-memory one. The parent directory must exist. A new file is made 0600; the file
  /// must not be a symbolic link, and must be this process's user's with no group or
  /// other write (FailedPrecondition otherwise: someone else's database is not trusted).
  static Result<std::unique_ptr<SqliteStore>> Open(const std::string& path);

 private:
  using SqlStore::SqlStore;
};

}  // namespace tpufleet
