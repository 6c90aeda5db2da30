// SqlStore: the Store over a SQL database, written once for every driver (sql_driver.h):
// the schema steps, the statements and the mapping of rows to core's records. The
// backends are its subclasses, which only open the driver: SqliteStore (sqlite_store.h)
// on a file, PostgresStore (postgres_store.h) on a server.
//
// Every method runs in a transaction of its own unless called from a Transaction body:
// reads in a read transaction (a node and its workers are one snapshot), writes in a
// write transaction. Transactions are SERIALIZABLE on both backends: SQLite has one
// writer at a time; on PostgreSQL a transaction that conflicts with another process's is
// run again from its start, up to kMaxConflictRetries times (so a Transaction body may
// run more than once, and must have no effect but its store calls and what it recomputes).
//
// Thread-safety: one connection behind a mutex; a Transaction holds it throughout.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "store/sql_driver.h"
#include "store/store.h"

namespace tpufleet {

class SqlStore : public Store {
 public:
  ~SqlStore() override;

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
  Result<std::vector<JobRunRecord>> JobRuns(std::string_view fleet,
                                            std::optional<Clock::WallTime> since) override;
  Status PutJobRun(const JobRunRecord& run) override;
  Result<std::vector<UsageRecord>> Usage(std::string_view fleet,
                                         std::optional<Clock::WallTime> since) override;
  Status AddUsage(const UsageRecord& u) override;
  Result<std::vector<FleetRecord>> Fleets() override;
  Status PutFleet(const FleetRecord& fleet) override;
  Result<std::optional<ServeRecord>> Serve() override;
  Status PutServe(const ServeRecord& s) override;
  Status ClearServe(int pid) override;
  Result<std::vector<UserRecord>> Users(std::string_view fleet) override;  // sql_users.cc
  Status PutUser(const UserRecord& user) override;
  Status DeleteUser(std::string_view fleet, std::string_view name) override;
  Status PutToken(const TokenRecord& token) override;  // sql_team.cc
  Result<std::optional<TokenRecord>> FindToken(std::string_view sha256) override;
  Status DeleteTokens(std::string_view person) override;
  Status AddAudit(const AuditRecord& record) override;
  Result<std::vector<AuditRecord>> Audit(std::optional<Clock::WallTime> since,
                                         int64_t limit) override;
  Status Transaction(const std::function<Status()>& body) override;

 protected:
  /// Takes the open connection; `where` names the store in messages (a path, or a URL
  /// without its password).
  SqlStore(std::unique_ptr<sql::Driver> driver, std::string where);
  /// Creates the schema, or migrates an older one forward; FailedPrecondition for a
  /// store written by a newer tpufleet. Open's last step.
  Status Migrate();

 private:
  /// Runs `body` in a transaction of `kind`, or at once inside a Transaction body.
  Status Atomic(sql::TxKind kind, const std::function<Status()>& body);
  /// Runs `body` in a new transaction of `kind`, again on a conflict. REQUIRES: mu_ held.
  Status RunTransaction(sql::TxKind kind, const std::function<Status()>& body);
  /// One statement, `args` bound to ?1, ?2, …, in a read (Read, Select) or write
  /// (Write, WriteReturning) transaction of its own unless inside one. Read and
  /// WriteReturning return its rows; Select makes a T of each with `row` (a
  /// Result<T>(const sql::Row&)).
  template <typename... Args>
  Result<std::vector<sql::Row>> Read(std::string_view sql, const Args&... args) {
    return Statement(sql::TxKind::kRead, sql, {sql::ToValue(args)...});
  }
  template <typename T, typename RowFn, typename... Args>
  Result<std::vector<T>> Select(std::string_view sql, const RowFn& row, const Args&... args) {
    TPUFLEET_ASSIGN_OR_RETURN(std::vector<sql::Row> rows, Read(sql, args...));
    return sql::MapRows<T>(rows, row);
  }
  template <typename... Args>
  Result<std::vector<sql::Row>> WriteReturning(std::string_view sql, const Args&... args) {
    return Statement(sql::TxKind::kWrite, sql, {sql::ToValue(args)...});
  }
  template <typename... Args>
  Status Write(std::string_view sql, const Args&... args) {
    return WriteReturning(sql, args...).status();
  }
  Result<std::vector<sql::Row>> Statement(sql::TxKind kind, std::string_view sql,
                                          std::vector<sql::Value> params);

  std::unique_ptr<sql::Driver> driver_;  // guarded by mu_
  std::string where_;
  std::recursive_mutex mu_;      // recursive so Transaction bodies can call in
  bool in_transaction_ = false;  // guarded by mu_
};

/// How often a transaction that lost a serialization conflict is run again before its
/// caller gets Unavailable: conflicts come from a few serve and CLI processes touching
/// the same rows, so one or two retries settle nearly all of them.
inline constexpr int kMaxConflictRetries = 8;
/// The pause before a retry, times the attempt: lets the winner commit first.
inline constexpr std::chrono::milliseconds kConflictBackoff{5};

}  // namespace tpufleet
