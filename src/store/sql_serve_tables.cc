// SqlStore's tables for what serve keeps: restartable jobs, the spend ledger, the
// serve record (schema step 7 in sql_store.cc), the fleets as last applied (step 11), the
// jobs' runs (step 12) and the nodes' usage (step 13).
#include <nlohmann/json.hpp>

#include "store/sql_driver.h"
#include "store/sql_store.h"

namespace tpufleet {
namespace {

using sql::MapRows;
using sql::Row;
using sql::ToMicros;
using sql::TxKind;

}  // namespace

Result<std::vector<JobRecord>> SqlStore::Jobs(std::string_view fleet) {
  return Select<JobRecord>(
      "SELECT fleet, node, id, name, spec_json, restart, max_restarts, restarts, state, "
      "last_reason, created_at, updated_at FROM jobs WHERE ?1 = '' OR fleet = ?1 "
      "ORDER BY fleet, node, id",
      [](const Row& q) -> Result<JobRecord> {
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

Status SqlStore::PutJob(const JobRecord& j) {
  static const std::string kUpsert =
      sql::UpsertSql("jobs",
                     {"fleet", "node", "id", "name", "spec_json", "restart", "max_restarts",
                      "restarts", "state", "last_reason", "created_at", "updated_at"},
                     3);
  return Write(kUpsert, j.fleet, j.node, j.id, j.name, j.spec_json, j.restart, j.max_restarts,
               j.restarts, j.state, j.last_reason, j.created_at, j.updated_at);
}

Result<std::vector<SpendRecord>> SqlStore::Spend(std::string_view fleet,
                                                 std::optional<Clock::WallTime> since) {
  return Select<SpendRecord>(
      "SELECT id, fleet, node, cloud_name, zone, type, capacity, state, usd_per_hour, "
      "start, end_time, owner FROM spend WHERE (?1 = '' OR fleet = ?1) "
      "AND (end_time IS NULL OR end_time >= ?2) ORDER BY start, id",
      [](const Row& q) -> Result<SpendRecord> {
        return SpendRecord{q.Int(0),    q.Text(1), q.Text(2),          q.Text(3),
                           q.Text(4),   q.Text(5), q.Text(6),          q.Text(7),
                           q.Double(8), q.Time(9), q.OptionalTime(10), q.Text(11)};
      },
      fleet, since ? ToMicros(*since) : INT64_MIN);
}

Result<int64_t> SqlStore::PutSpend(const SpendRecord& s) {
  // A write that returns the row's id (RETURNING): a new stretch's (?1, the id 0, unused),
  // or the updated one's.
  const char* sql = s.id == 0 ? "INSERT INTO spend (fleet, node, cloud_name, zone, type, capacity, "
                                "state, usd_per_hour, start, end_time, owner) "
                                "VALUES (?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) "
                                "RETURNING id"
                              : "UPDATE spend SET fleet = ?2, node = ?3, cloud_name = ?4, "
                                "zone = ?5, type = ?6, capacity = ?7, state = ?8, "
                                "usd_per_hour = ?9, start = ?10, end_time = ?11, owner = ?12 "
                                "WHERE id = ?1 RETURNING id";
  Result<std::vector<Row>> ids =
      WriteReturning(sql, s.id, s.fleet, s.node, s.cloud_name, s.zone, s.type, s.capacity, s.state,
                     s.usd_per_hour, s.start, s.end, s.owner);
  TPUFLEET_TRY(ids.status());
  if (ids->empty()) {
    return NotFoundError("state store: no spend stretch " + std::to_string(s.id));
  }
  return (*ids)[0].Int(0);
}

Result<std::vector<JobRunRecord>> SqlStore::JobRuns(std::string_view fleet,
                                                    std::optional<Clock::WallTime> since) {
  return Select<JobRunRecord>(
      "SELECT fleet, node, id, name, person, unix_user, start, end_time FROM job_runs "
      "WHERE (?1 = '' OR fleet = ?1) AND (end_time IS NULL OR end_time >= ?2) "
      "ORDER BY start, fleet, node, id",
      [](const Row& q) -> Result<JobRunRecord> {
        return JobRunRecord{q.Text(0), q.Text(1), q.Text(2), q.Text(3),
                            q.Text(4), q.Text(5), q.Time(6), q.OptionalTime(7)};
      },
      fleet, since ? ToMicros(*since) : INT64_MIN);
}

Status SqlStore::PutJobRun(const JobRunRecord& r) {
  static const std::string kUpsert = sql::UpsertSql(
      "job_runs", {"fleet", "node", "id", "name", "person", "unix_user", "start", "end_time"}, 3);
  return Write(kUpsert, r.fleet, r.node, r.id, r.name, r.person, r.user, r.start, r.end);
}

Result<std::vector<UsageRecord>> SqlStore::Usage(std::string_view fleet,
                                                 std::optional<Clock::WallTime> since) {
  constexpr int64_t kHourMicros = int64_t{3600} * 1000 * 1000;
  return Select<UsageRecord>(
      "SELECT fleet, node, job, hour_start, seconds, busy_seconds, input_bound_seconds, "
      "idle_seconds, measured_until FROM node_usage "
      "WHERE (?1 = '' OR fleet = ?1) AND hour_start > ?2 ORDER BY hour_start, fleet, node, job",
      [](const Row& q) -> Result<UsageRecord> {
        return UsageRecord{q.Text(0),   q.Text(1),   q.Text(2),   q.Time(3), q.Double(4),
                           q.Double(5), q.Double(6), q.Double(7), q.Time(8)};
      },
      fleet, since ? ToMicros(*since) - kHourMicros : INT64_MIN);
}

Status SqlStore::AddUsage(const UsageRecord& u) {
  return Write(
      "INSERT INTO node_usage (fleet, node, hour_start, job, seconds, busy_seconds, "
      "input_bound_seconds, idle_seconds, measured_until) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) "
      "ON CONFLICT (fleet, node, hour_start, job) DO UPDATE SET "
      "seconds = node_usage.seconds + excluded.seconds, "
      "busy_seconds = node_usage.busy_seconds + excluded.busy_seconds, "
      "input_bound_seconds = node_usage.input_bound_seconds + excluded.input_bound_seconds, "
      "idle_seconds = node_usage.idle_seconds + excluded.idle_seconds, "
      "measured_until = CASE WHEN excluded.measured_until > node_usage.measured_until "
      "THEN excluded.measured_until ELSE node_usage.measured_until END",
      u.fleet, u.node, u.hour, u.job, u.seconds, u.busy_seconds, u.input_bound_seconds,
      u.idle_seconds, u.measured_until);
}

Result<std::vector<FleetRecord>> SqlStore::Fleets() {
  return Select<FleetRecord>(
      "SELECT name, owner, budget, updated_at FROM fleets ORDER BY name",
      [](const Row& q) -> Result<FleetRecord> {
        FleetRecord f;
        f.name = q.Text(0);
        f.owner = q.Text(1);
        // {"usd_per_day": D, "usd_total": T}, each only when the spec set it.
        nlohmann::json budget = nlohmann::json::parse(q.Text(2), nullptr, false);
        if (!budget.is_object()) {
          return InternalError("state store: fleet " + f.name + "'s budget is not a JSON object");
        }
        for (auto [key, limit] :
             {std::pair{"usd_per_day", &f.usd_per_day}, std::pair{"usd_total", &f.usd_total}}) {
          if (!budget.contains(key)) {
            continue;
          }
          if (!budget[key].is_number()) {
            return InternalError("state store: fleet " + f.name + "'s budget." + key +
                                 " is not a number");
          }
          *limit = budget[key].get<double>();
        }
        f.updated_at = q.Time(3);
        return f;
      });
}

Status SqlStore::PutFleet(const FleetRecord& f) {
  static const std::string kUpsert =
      sql::UpsertSql("fleets", {"name", "owner", "budget", "updated_at"}, 1);
  nlohmann::json budget = nlohmann::json::object();
  if (f.usd_per_day) {
    budget["usd_per_day"] = *f.usd_per_day;
  }
  if (f.usd_total) {
    budget["usd_total"] = *f.usd_total;
  }
  return Write(kUpsert, f.name, f.owner, budget.dump(), f.updated_at);
}

Result<std::optional<ServeRecord>> SqlStore::Serve() {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<Row> rows,
                            Read("SELECT pid, host, fleets, started_at, last_pass_at FROM serve"));
  if (rows.empty()) {
    return std::optional<ServeRecord>();
  }
  const Row& q = rows[0];
  ServeRecord r;
  r.pid = static_cast<int>(q.Int(0));
  r.host = q.Text(1);
  TPUFLEET_ASSIGN_OR_RETURN(r.fleets, sql::StringsFromJson(q.Text(2), "the serve record's fleets"));
  r.started_at = q.Time(3);
  r.last_pass_at = q.Time(4);
  return std::optional<ServeRecord>(std::move(r));
}

Status SqlStore::PutServe(const ServeRecord& s) {
  // One row at most: the CHECK pins its key to 1.
  static const std::string kUpsert =
      sql::UpsertSql("serve", {"one", "pid", "host", "fleets", "started_at", "last_pass_at"}, 1);
  return Write(kUpsert, 1, s.pid, s.host, nlohmann::json(s.fleets).dump(), s.started_at,
               s.last_pass_at);
}

Status SqlStore::ClearServe(int pid) {
  return Write("DELETE FROM serve WHERE pid = ?1", pid);
}

}  // namespace tpufleet
