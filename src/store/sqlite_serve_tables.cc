// SqliteStore's tables for what serve keeps: restartable jobs, the spend ledger and the
// serve record (schema step 7 in sqlite_store.cc).
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "store/sqlite_internal.h"
#include "store/sqlite_store.h"

namespace tpufleet {
namespace {

using sqlite_internal::RunStatement;
using sqlite_internal::SelectAll;
using sqlite_internal::Stmt;
using sqlite_internal::ToMicros;

// The serve row's fleets column: a JSON array of strings.
Result<std::vector<std::string>> FleetsFromJson(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  std::vector<std::string> fleets;
  if (!j.is_array()) {
    return InternalError("state store: the serve record's fleets are not a JSON array");
  }
  for (const nlohmann::json& f : j) {
    if (!f.is_string()) {
      return InternalError("state store: the serve record's fleets are not strings");
    }
    fleets.push_back(f.get<std::string>());
  }
  return fleets;
}

}  // namespace

Result<std::vector<JobRecord>> SqliteStore::Jobs(std::string_view fleet) {
  std::lock_guard<std::recursive_mutex> l(mu_);
  return SelectAll<JobRecord>(
      db_,
      "SELECT fleet, node, id, name, spec_json, restart, max_restarts, restarts, state, "
      "last_reason, created_at, updated_at FROM jobs WHERE ?1 = '' OR fleet = ?1 "
      "ORDER BY fleet, node, id",
      [](const Stmt& q) -> Result<JobRecord> {
        JobRecord j;
        j.fleet = q.Text(0);
        j.node = q.Text(1);
        j.id = q.Text(2);
        j.name = q.Text(3);
        j.spec_json = q.Text(4);
        j.restart = q.Text(5);
        j.max_restarts = static_cast<int>(q.Int(6));
        j.restarts = static_cast<int>(q.Int(7));
        j.state = q.Text(8);
        j.last_reason = q.Text(9);
        j.created_at = q.Time(10);
        j.updated_at = q.Time(11);
        return j;
      },
      fleet);
}

Status SqliteStore::PutJob(const JobRecord& j) {
  std::lock_guard<std::recursive_mutex> l(mu_);
  return RunStatement(db_,
                      "INSERT OR REPLACE INTO jobs (fleet, node, id, name, spec_json, restart, "
                      "max_restarts, restarts, state, last_reason, created_at, updated_at) "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                      j.fleet, j.node, j.id, j.name, j.spec_json, j.restart, j.max_restarts,
                      j.restarts, j.state, j.last_reason, j.created_at, j.updated_at);
}

Result<std::vector<SpendRecord>> SqliteStore::Spend(std::string_view fleet,
                                                    std::optional<Clock::WallTime> since) {
  std::lock_guard<std::recursive_mutex> l(mu_);
  return SelectAll<SpendRecord>(
      db_,
      "SELECT id, fleet, node, cloud_name, zone, type, capacity, state, usd_per_hour, start, "
      "end_time FROM spend WHERE (?1 = '' OR fleet = ?1) "
      "AND (end_time IS NULL OR end_time >= ?2) ORDER BY start, id",
      [](const Stmt& q) -> Result<SpendRecord> {
        return SpendRecord{q.Int(0),    q.Text(1), q.Text(2),         q.Text(3),
                           q.Text(4),   q.Text(5), q.Text(6),         q.Text(7),
                           q.Double(8), q.Time(9), q.OptionalTime(10)};
      },
      fleet, since ? ToMicros(*since) : INT64_MIN);
}

Result<int64_t> SqliteStore::PutSpend(const SpendRecord& s) {
  std::lock_guard<std::recursive_mutex> l(mu_);
  if (s.id == 0) {
    TPUFLEET_TRY(RunStatement(db_,
                              "INSERT INTO spend (fleet, node, cloud_name, zone, type, capacity, "
                              "state, usd_per_hour, start, end_time) "
                              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                              s.fleet, s.node, s.cloud_name, s.zone, s.type, s.capacity, s.state,
                              s.usd_per_hour, s.start, s.end));
    return static_cast<int64_t>(sqlite3_last_insert_rowid(db_));
  }
  TPUFLEET_TRY(RunStatement(db_,
                            "UPDATE spend SET fleet = ?2, node = ?3, cloud_name = ?4, zone = ?5, "
                            "type = ?6, capacity = ?7, state = ?8, usd_per_hour = ?9, start = ?10, "
                            "end_time = ?11 WHERE id = ?1",
                            s.id, s.fleet, s.node, s.cloud_name, s.zone, s.type, s.capacity,
                            s.state, s.usd_per_hour, s.start, s.end));
  if (sqlite3_changes(db_) == 0) {
    return NotFoundError("state store: no spend stretch " + std::to_string(s.id));
  }
  return s.id;
}

Result<std::optional<ServeRecord>> SqliteStore::Serve() {
  std::lock_guard<std::recursive_mutex> l(mu_);
  TPUFLEET_ASSIGN_OR_RETURN(
      std::vector<ServeRecord> rows,
      SelectAll<ServeRecord>(db_, "SELECT pid, host, fleets, started_at, last_pass_at FROM serve",
                             [](const Stmt& q) -> Result<ServeRecord> {
                               ServeRecord r;
                               r.pid = static_cast<int>(q.Int(0));
                               r.host = q.Text(1);
                               TPUFLEET_ASSIGN_OR_RETURN(r.fleets, FleetsFromJson(q.Text(2)));
                               r.started_at = q.Time(3);
                               r.last_pass_at = q.Time(4);
                               return r;
                             }));
  if (rows.empty()) {
    return std::optional<ServeRecord>();
  }
  return std::optional<ServeRecord>(std::move(rows[0]));
}

Status SqliteStore::PutServe(const ServeRecord& s) {
  std::lock_guard<std::recursive_mutex> l(mu_);
  return RunStatement(db_,
                      "INSERT OR REPLACE INTO serve (one, pid, host, fleets, started_at, "
                      "last_pass_at) VALUES (1, ?1, ?2, ?3, ?4, ?5)",
                      s.pid, s.host, nlohmann::json(s.fleets).dump(), s.started_at, s.last_pass_at);
}

Status SqliteStore::ClearServe(int pid) {
  std::lock_guard<std::recursive_mutex> l(mu_);
  return RunStatement(db_, "DELETE FROM serve WHERE pid = ?1", pid);
}

}  // namespace tpufleet
