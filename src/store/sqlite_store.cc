#include "store/sqlite_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "store/sql_driver.h"
#include "util/file.h"

namespace tpufleet {
namespace {

using sql::Value;

// How long a writer waits for another process's transaction before giving up. An
// `up` step holds the lock for milliseconds; seconds cover a loaded machine.
constexpr int kBusyTimeoutMs = 10000;

// The connection's last error as a Status, classified by what the caller does next.
Status SqliteError(sqlite3* db, std::string_view what) {
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

// The sql::Driver on one SQLite connection. SQLite gives every transaction serializable
// isolation by letting one writer in at a time, so nothing conflicts.
class SqliteDriver final : public sql::Driver {
 public:
  explicit SqliteDriver(sqlite3* db) : db_(db) {}
  ~SqliteDriver() override { sqlite3_close(db_); }

  Status Begin(sql::TxKind kind) override {
    // IMMEDIATE takes the write lock now, so a write never fails half-way on a lock; a
    // read takes none and sees one snapshot (WAL).
    return Exec(kind == sql::TxKind::kRead ? "BEGIN" : "BEGIN IMMEDIATE");
  }

  Status Exec(const std::string& sql) override {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string m = err ? err : "unknown error";
      sqlite3_free(err);
      return SqliteError(db_, m);
    }
    return Status::Ok();
  }

  Result<std::vector<sql::Row>> Query(std::string_view sql,
                                      const std::vector<Value>& params) override {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr) !=
        SQLITE_OK) {
      return SqliteError(db_, "preparing a statement");
    }
    std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> owned(stmt, sqlite3_finalize);
    for (size_t i = 0; i < params.size(); ++i) {
      int at = static_cast<int>(i + 1);
      const Value& v = params[i];
      if (const int64_t* n = std::get_if<int64_t>(&v)) {
        sqlite3_bind_int64(stmt, at, *n);
      } else if (const double* d = std::get_if<double>(&v)) {
        sqlite3_bind_double(stmt, at, *d);
      } else if (const std::string* s = std::get_if<std::string>(&v)) {
        sqlite3_bind_text(stmt, at, s->data(), static_cast<int>(s->size()), SQLITE_TRANSIENT);
      } else {
        sqlite3_bind_null(stmt, at);
      }
    }
    std::vector<sql::Row> rows;
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      std::vector<Value> columns;
      for (int c = 0, n = sqlite3_column_count(stmt); c < n; ++c) {
        switch (sqlite3_column_type(stmt, c)) {
          case SQLITE_INTEGER:
            columns.emplace_back(static_cast<int64_t>(sqlite3_column_int64(stmt, c)));
            break;
          case SQLITE_FLOAT:
            columns.emplace_back(sqlite3_column_double(stmt, c));
            break;
          case SQLITE_NULL:
            columns.emplace_back();
            break;
          default:
            columns.emplace_back(
                std::string(reinterpret_cast<const char*>(sqlite3_column_text(stmt, c)),
                            static_cast<size_t>(sqlite3_column_bytes(stmt, c))));
        }
      }
      rows.emplace_back(std::move(columns));
    }
    if (rc != SQLITE_DONE) {
      return SqliteError(db_, "running a statement");
    }
    return rows;
  }

  Result<int64_t> SchemaVersion() override {
    TPUFLEET_ASSIGN_OR_RETURN(std::vector<sql::Row> rows, Query("PRAGMA user_version", {}));
    return rows.empty() ? 0 : rows[0].Int(0);
  }

  Status SetSchemaVersion(int64_t version) override {
    // user_version takes no bound parameter; the number is ours, not the user's.
    return Exec("PRAGMA user_version = " + std::to_string(version));
  }

  std::string Ddl(std::string_view sqlite_ddl) const override { return std::string(sqlite_ddl); }
  bool conflicted() const override { return false; }

 private:
  sqlite3* db_;  // owned
};

// OK when `st` (the database file's) is a regular file of this process's user that its
// group and others may not write.
Status CheckDatabaseFile(const std::string& path, const struct stat* st) {
  if (st == nullptr) {
    return PermissionDeniedError("state store: cannot stat " + path + ": " +
                                 std::strerror(errno));
  }
  if (!S_ISREG(st->st_mode)) {
    return FailedPreconditionError("state store: " + path + " is not a regular file");
  }
  return CheckOwnedByMe("state store: " + path, *st, S_IWGRP | S_IWOTH);
}

}  // namespace

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path) {
  if (path != ":memory:") {
    // Never through a link, and only this user's, unwritable by others: a planted link
    // would put the database where someone else chose, a planted database would feed
    // tpufleet their addresses and host keys (issue 10). An existing file is looked at
    // with lstat, never opened: closing any descriptor of the file drops every POSIX lock
    // this process holds on it, and serve keeps connections open while its served
    // commands open the store again; SQLite would then take a later reader's exit for
    // the last one and remove the WAL index under serve's feet.
    struct stat st {};
    int stat_rc = ::lstat(path.c_str(), &st);
    if (stat_rc != 0 && errno == ENOENT) {
      // Create it 0600 ourselves: SQLite would use the umask. Its -wal and -shm files
      // copy the database file's permissions. A file new to this process holds no lock.
      int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
      if (fd < 0 && errno != EEXIST) {
        return PermissionDeniedError("state store: cannot create " + path + ": " +
                                     std::strerror(errno));
      }
      if (fd >= 0) {
        ::close(fd);
      }
      stat_rc = ::lstat(path.c_str(), &st);  // made here, or by another process meanwhile
    }
    if (stat_rc == 0 && S_ISLNK(st.st_mode)) {
      return FailedPreconditionError("state store: " + path +
                                     " is a symbolic link; the database must be a file");
    }
    TPUFLEET_TRY(CheckDatabaseFile(path, stat_rc == 0 ? &st : nullptr));
  }
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW,
                      nullptr) != SQLITE_OK) {
    Status s = SqliteError(db, "opening " + path);
    sqlite3_close(db);
    return s;
  }
  auto driver = std::make_unique<SqliteDriver>(db);
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  TPUFLEET_TRY(driver->Exec("PRAGMA foreign_keys = ON"));
  if (path != ":memory:") {
    TPUFLEET_TRY(driver->Exec("PRAGMA journal_mode = WAL"));
  }
  std::unique_ptr<SqliteStore> store(new SqliteStore(std::move(driver), path));
  TPUFLEET_TRY(store->Migrate());
  return store;
}

}  // namespace tpufleet
