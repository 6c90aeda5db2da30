// SqliteStore: the Store on a SQLite file, by default
// ${XDG_STATE_HOME:-~/.local/state}/tpufleet/state.db.
//
// The file is created 0600 (it names projects and hosts a user may not want others to
// read). WAL journaling and a busy timeout let `status` read while `up` writes, and
// several tpufleet processes share one file safely. The schema carries its version in
// PRAGMA user_version; Open migrates an older file forward and refuses a newer one.
//
// Thread-safety: one connection behind a mutex; a Transaction holds it throughout.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "store/store.h"

struct sqlite3;

namespace tpufleet {

class SqliteStore final : public Store {
 public:
  /// Opens (creating if needed) the database at `path`; ":memory:" for a private
  /// in-memory one. The parent directory must exist. A new file is made 0600; the file
  /// must not be a symbolic link, and must be this process's user's with no group or
  /// other write (FailedPrecondition otherwise: someone else's database is not trusted).
  static Result<std::unique_ptr<SqliteStore>> Open(const std::string& path);
  ~SqliteStore() override;

  Result<std::vector<NodeRecord>> Nodes(std::string_view fleet) override;
  Status PutNode(const NodeRecord& node) override;
  Status DeleteNode(std::string_view fleet, std::string_view name) override;
  Result<std::vector<LeftoverRecord>> Leftovers(std::string_view fleet) override;
  Status PutLeftover(const LeftoverRecord& leftover) override;
  Status DeleteLeftover(const LeftoverRecord& leftover) override;
  Status AddEvent(const EventRecord& event) override;
  Result<std::vector<EventRecord>> Events(const EventQuery& query) override;
  Result<std::vector<JobRecord>> Jobs(std::string_view fleet) override;
  Status PutJob(const JobRecord& job) override;
  Result<std::vector<SpendRecord>> Spend(std::string_view fleet,
                                         std::optional<Clock::WallTime> since) override;
  Result<int64_t> PutSpend(const SpendRecord& s) override;
  Result<std::optional<ServeRecord>> Serve() override;
  Status PutServe(const ServeRecord& s) override;
  Status ClearServe(int pid) override;
  Status Transaction(const std::function<Status()>& body) override;

 private:
  explicit SqliteStore(sqlite3* db) : db_(db) {}
  Status Exec(const char* sql);

  sqlite3* db_;                  // owned
  std::recursive_mutex mu_;      // guards db_; recursive so Transaction bodies can call in
  bool in_transaction_ = false;  // guarded by mu_
};

}  // namespace tpufleet
