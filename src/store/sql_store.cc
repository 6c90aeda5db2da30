#include "store/sql_store.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <iterator>
#include <thread>

#include <nlohmann/json.hpp>

#include "store/sql_driver.h"

namespace tpufleet {
namespace {

using sql::MapRows;
using sql::Row;
using sql::ToMicros;
using sql::TxKind;

constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE nodes (
  fleet TEXT NOT NULL, name TEXT NOT NULL, provider TEXT NOT NULL, project TEXT NOT NULL,
  zone TEXT NOT NULL, type TEXT NOT NULL, runtime_version TEXT NOT NULL,
  capacity TEXT NOT NULL, queued_resource TEXT NOT NULL, cloud_name TEXT NOT NULL,
  request_id TEXT NOT NULL, state TEXT NOT NULL, health TEXT NOT NULL,
  spec_hash TEXT NOT NULL, login TEXT NOT NULL, port INTEGER NOT NULL,
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
  PRIMARY KEY (fleet, name));
CREATE TABLE workers (
  fleet TEXT NOT NULL, node TEXT NOT NULL, idx INTEGER NOT NULL, address TEXT NOT NULL,
  hostname TEXT NOT NULL, host_key TEXT NOT NULL, setup_done INTEGER NOT NULL,
  PRIMARY KEY (fleet, node, idx),
  FOREIGN KEY (fleet, node) REFERENCES nodes (fleet, name) ON DELETE CASCADE);
CREATE TABLE events (
  id INTEGER PRIMARY KEY AUTOINCREMENT, time INTEGER NOT NULL, fleet TEXT NOT NULL,
  node TEXT NOT NULL, kind TEXT NOT NULL, detail TEXT NOT NULL);
CREATE INDEX events_by_node ON events (fleet, node, kind, time);
)sql";

// kSchemaSteps[i] takes a file from schema version i to i + 1 (version 0: a new, empty
// file). To change the schema, append a step; never edit one that has shipped, since
// files written by older builds are migrated by replaying the steps they lack.
constexpr const char* kSchemaSteps[] = {
    kSchemaV1,
    // 2: each node's labels, a JSON object of strings; older nodes get none.
    "ALTER TABLE nodes ADD COLUMN labels TEXT NOT NULL DEFAULT '{}';",
    // 3: leftovers, the resources a failed or superseded create left behind, until
    // they are deleted; older files have none recorded.
    R"sql(
CREATE TABLE leftovers (
  fleet TEXT NOT NULL, name TEXT NOT NULL, zone TEXT NOT NULL, queued INTEGER NOT NULL,
  provider TEXT NOT NULL, project TEXT NOT NULL, type TEXT NOT NULL,
  capacity TEXT NOT NULL, reason TEXT NOT NULL, last_error TEXT NOT NULL,
  since INTEGER NOT NULL,
  PRIMARY KEY (fleet, name, zone, queued));
)sql",
    // 4: the digest of the setup script each worker ran; older workers get "", which
    // says the version is not known (up runs the spec's setup there again).
    "ALTER TABLE workers ADD COLUMN setup_digest TEXT NOT NULL DEFAULT '';",
    // 5: the agent each worker runs (its binary's SHA-256); older workers get "", which
    // says it is not known (up looks).
    "ALTER TABLE workers ADD COLUMN agent_sha256 TEXT NOT NULL DEFAULT '';",
    // 6: each worker's address inside its network (a job's coordinator and worker list);
    // older workers get "", and the SSH address stands in until the next refresh.
    "ALTER TABLE workers ADD COLUMN internal_address TEXT NOT NULL DEFAULT '';",
    // 7: what serve keeps (issue 14): the jobs `run --restart` asked it to keep going,
    // the spend ledger of billable stretches, and the serve process (one row at most:
    // the CHECK pins its key). Older files have none of them.
    R"sql(
CREATE TABLE jobs (
  fleet TEXT NOT NULL, node TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL,
  spec_json TEXT NOT NULL, restart TEXT NOT NULL, max_restarts INTEGER NOT NULL,
  restarts INTEGER NOT NULL, state TEXT NOT NULL, last_reason TEXT NOT NULL,
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
  PRIMARY KEY (fleet, node, id));
CREATE TABLE spend (
  id INTEGER PRIMARY KEY AUTOINCREMENT, fleet TEXT NOT NULL, node TEXT NOT NULL,
  cloud_name TEXT NOT NULL, zone TEXT NOT NULL, type TEXT NOT NULL,
  capacity TEXT NOT NULL, state TEXT NOT NULL, usd_per_hour REAL NOT NULL,
  start INTEGER NOT NULL, end_time INTEGER);
CREATE INDEX spend_by_fleet ON spend (fleet, end_time);
CREATE TABLE serve (
  one INTEGER PRIMARY KEY CHECK (one = 1), pid INTEGER NOT NULL, host TEXT NOT NULL,
  fleets TEXT NOT NULL, started_at INTEGER NOT NULL, last_pass_at INTEGER NOT NULL);
)sql",
    // 8: the collaborators `tpufleet users` added (issue 16); keys and nodes are JSON
    // arrays of strings. Older files have none.
    R"sql(
CREATE TABLE users (
  fleet TEXT NOT NULL, name TEXT NOT NULL, keys TEXT NOT NULL, sudo INTEGER NOT NULL,
  nodes TEXT NOT NULL, role TEXT NOT NULL, created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (fleet, name));
)sql",
    // 9: each node's data disks (issue 15), a JSON array of {"source", "mode"}; older
    // nodes get none until the next refresh records what the cloud says.
    "ALTER TABLE nodes ADD COLUMN data_disks TEXT NOT NULL DEFAULT '[]';",
    // 10: the team server's per-person tokens (their SHA-256 only) and its audit log
    // (issue 16). Older files have none.
    R"sql(
CREATE TABLE tokens (
  sha256 TEXT PRIMARY KEY, person TEXT NOT NULL, label TEXT NOT NULL,
  created_at INTEGER NOT NULL);
CREATE INDEX tokens_by_person ON tokens (person);
CREATE TABLE audit (
  id INTEGER PRIMARY KEY AUTOINCREMENT, time INTEGER NOT NULL, person TEXT NOT NULL,
  action TEXT NOT NULL, outcome TEXT NOT NULL);
CREATE INDEX audit_by_time ON audit (time);
)sql",
    // 11: who each ledger stretch is billed to, and each fleet's owner and budget as last
    // applied (issue 17); older stretches are billed to no one ("") and older files
    // know no fleet until the next `up` or serve pass.
    R"sql(
ALTER TABLE spend ADD COLUMN owner TEXT NOT NULL DEFAULT '';
CREATE TABLE fleets (
  name TEXT PRIMARY KEY, owner TEXT NOT NULL, budget TEXT NOT NULL,
  updated_at INTEGER NOT NULL);
)sql",
    // 12: each job's run on its node and the person who ran it, what `cost --by job`
    // shares the node's hours among (issue 17). Older files know no run: their hours
    // are the fleet owner's.
    R"sql(
CREATE TABLE job_runs (
  fleet TEXT NOT NULL, node TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL,
  person TEXT NOT NULL, unix_user TEXT NOT NULL, start INTEGER NOT NULL,
  end_time INTEGER,
  PRIMARY KEY (fleet, node, id));
)sql",
    // 13: what the agents measured of each node per hour and job, serve's metrics rounds
    // added up: the goodput of `cost --goodput` (issue 17). Older files measured nothing.
    R"sql(
CREATE TABLE node_usage (
  fleet TEXT NOT NULL, node TEXT NOT NULL, hour_start INTEGER NOT NULL, job TEXT NOT NULL,
  seconds REAL NOT NULL, busy_seconds REAL NOT NULL, input_bound_seconds REAL NOT NULL,
  idle_seconds REAL NOT NULL, measured_until INTEGER NOT NULL,
  PRIMARY KEY (fleet, node, hour_start, job));
CREATE INDEX node_usage_by_hour ON node_usage (hour_start);
)sql",
};
// The schema this build writes.
constexpr int kSchemaVersion = static_cast<int>(std::size(kSchemaSteps));

// A column holding JSON the store wrote (nlohmann::json(…).dump()), parsed: an array
// (`array`) or an object whose every element (an object's every value) `ok` accepts;
// Internal "state store: WHAT are not SHAPE" when it is anything else (a file edited by
// hand). The one check of the store's JSON columns (labels, disks, keys, fleets…).
Result<nlohmann::json> JsonColumn(const std::string& text, bool array,
                                  bool (*ok)(const nlohmann::json&), std::string_view what,
                                  std::string_view shape) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!(array ? j.is_array() : j.is_object()) ||
      !std::all_of(j.begin(), j.end(), [&](const nlohmann::json& e) { return ok(e); })) {
    return InternalError("state store: " + std::string(what) + " are not " + std::string(shape));
  }
  return j;
}

std::string LabelsToJson(const std::map<std::string, std::string>& labels) {
  return nlohmann::json(labels).dump();
}

// The labels column as written by LabelsToJson.
Result<std::map<std::string, std::string>> LabelsFromJson(const std::string& text,
                                                          const std::string& node) {
  TPUFLEET_ASSIGN_OR_RETURN(
      nlohmann::json j,
      JsonColumn(text, false, [](const nlohmann::json& v) { return v.is_string(); },
                      "the labels of node " + node, "a JSON object of strings"));
  return j.get<std::map<std::string, std::string>>();
}

std::string DisksToJson(const std::vector<NodeDisk>& disks) {
  nlohmann::json j = nlohmann::json::array();
  for (const NodeDisk& d : disks) {
    j.push_back({{"source", d.source}, {"mode", d.mode}});
  }
  return j.dump();
}

// The data_disks column as written by DisksToJson.
Result<std::vector<NodeDisk>> DisksFromJson(const std::string& text, const std::string& node) {
  TPUFLEET_ASSIGN_OR_RETURN(
      nlohmann::json j,
      JsonColumn(
          text, true,
          [](const nlohmann::json& d) {
            return d.is_object() && d.value("source", nlohmann::json()).is_string() &&
                   d.value("mode", nlohmann::json()).is_string();
          },
          "the data disks of node " + node, "a JSON array of {source, mode} strings"));
  std::vector<NodeDisk> disks;
  for (const nlohmann::json& d : j) {
    disks.push_back({d["source"].get<std::string>(), d["mode"].get<std::string>()});
  }
  return disks;
}

}  // namespace

Result<std::vector<std::string>> sql::StringsFromJson(const std::string& text,
                                                      std::string_view what) {
  TPUFLEET_ASSIGN_OR_RETURN(
      nlohmann::json j,
      JsonColumn(text, true, [](const nlohmann::json& e) { return e.is_string(); }, what,
                 "a JSON array of strings"));
  return j.get<std::vector<std::string>>();
}

bool sql::Row::IsNull(int col) const {
  return std::holds_alternative<std::monostate>(columns_.at(static_cast<size_t>(col)));
}

std::string sql::Row::Text(int col) const {
  const Value& v = columns_.at(static_cast<size_t>(col));
  if (const std::string* s = std::get_if<std::string>(&v)) {
    return *s;
  }
  if (const int64_t* i = std::get_if<int64_t>(&v)) {
    return std::to_string(*i);
  }
  return "";
}

int64_t sql::Row::Int(int col) const {
  const Value& v = columns_.at(static_cast<size_t>(col));
  if (const int64_t* i = std::get_if<int64_t>(&v)) {
    return *i;
  }
  int64_t out = 0;
  if (const std::string* s = std::get_if<std::string>(&v)) {
    std::from_chars(s->data(), s->data() + s->size(), out);
  }
  return out;
}

double sql::Row::Double(int col) const {
  const Value& v = columns_.at(static_cast<size_t>(col));
  if (const double* d = std::get_if<double>(&v)) {
    return *d;
  }
  if (const int64_t* i = std::get_if<int64_t>(&v)) {
    return static_cast<double>(*i);
  }
  const std::string* s = std::get_if<std::string>(&v);
  return s != nullptr ? std::strtod(s->c_str(), nullptr) : 0.0;
}

std::string sql::UpsertSql(std::string_view table, const std::vector<std::string_view>& columns,
                           size_t key_columns) {
  std::string names;
  std::string params;
  std::string keys;
  std::string updates;
  for (size_t i = 0; i < columns.size(); ++i) {
    std::string c(columns[i]);
    names += (i ? ", " : "") + c;
    params += (i ? ", ?" : "?") + std::to_string(i + 1);
    if (i < key_columns) {
      keys += (i ? ", " : "") + c;
    } else {
      updates += (updates.empty() ? "" : ", ") + c + " = excluded." + c;
    }
  }
  return "INSERT INTO " + std::string(table) + " (" + names + ") VALUES (" + params +
         ") ON CONFLICT (" + keys + ") DO " +
         (updates.empty() ? "NOTHING" : "UPDATE SET " + updates);
}

std::string sql::EventsSql(const EventQuery& query) {
  std::string s = "SELECT id, time, fleet, node, kind, detail FROM events WHERE time >= ?4";
  if (!query.fleet.empty()) {
    s += " AND fleet = ?1";
  }
  if (!query.node.empty()) {
    s += " AND node = ?2";
  }
  if (!query.kind.empty()) {
    s += " AND kind = ?3";
  }
  if (query.fleet_only) {
    s += " AND node = ''";
  }
  return s + " ORDER BY id DESC LIMIT ?5";
}

SqlStore::SqlStore(std::unique_ptr<sql::Driver> driver, std::string where)
    : driver_(std::move(driver)), where_(std::move(where)) {}

SqlStore::~SqlStore() = default;

Status SqlStore::Migrate() {
  std::lock_guard<std::recursive_mutex> l(mu_);
  // Read the version and create or migrate in one schema transaction, so two processes
  // opening a new store at once cannot both create it.
  return RunTransaction(TxKind::kSchema, [&]() -> Status {
    TPUFLEET_ASSIGN_OR_RETURN(int64_t v, driver_->SchemaVersion());
    if (v > kSchemaVersion) {
      return FailedPreconditionError(where_ + " was written by a newer tpufleet (schema " +
                                     std::to_string(v) + ", this one knows " +
                                     std::to_string(kSchemaVersion) + "); upgrade tpufleet");
    }
    if (v == kSchemaVersion) {
      return Status::Ok();
    }
    for (int64_t step = v; step < kSchemaVersion; ++step) {
      TPUFLEET_TRY(driver_->Exec(driver_->Ddl(kSchemaSteps[step])));
    }
    return driver_->SetSchemaVersion(kSchemaVersion);
  });
}

Status SqlStore::Transaction(const std::function<Status()>& body) {
  std::lock_guard<std::recursive_mutex> l(mu_);
  if (in_transaction_) {
    return InternalError("state store: nested transaction");
  }
  return RunTransaction(TxKind::kWrite, body);
}

Status SqlStore::Atomic(TxKind kind, const std::function<Status()>& body) {
  std::lock_guard<std::recursive_mutex> l(mu_);
  return in_transaction_ ? body() : RunTransaction(kind, body);
}

Status SqlStore::RunTransaction(TxKind kind, const std::function<Status()>& body) {
  Status s;
  for (int attempt = 0; attempt <= kMaxConflictRetries; ++attempt) {
    if (attempt > 0) {
      std::this_thread::sleep_for(kConflictBackoff * attempt);
    }
    s = driver_->Begin(kind);
    if (s.ok()) {
      in_transaction_ = true;
      s = body();
      in_transaction_ = false;
      if (s.ok()) {
        s = driver_->Exec("COMMIT");
      }
    }
    if (s.ok()) {
      return s;
    }
    bool again = driver_->conflicted();
    (void)driver_->Exec("ROLLBACK");
    if (!again) {
      return s;
    }
  }
  return UnavailableError(s.message() + " (still conflicting with another process after " +
                          std::to_string(kMaxConflictRetries) + " retries; try again)");
}

Result<std::vector<sql::Row>> SqlStore::Statement(TxKind kind, std::string_view sql,
                                                  std::vector<sql::Value> params) {
  std::vector<Row> rows;
  TPUFLEET_TRY(Atomic(kind, [&]() -> Status {
    TPUFLEET_ASSIGN_OR_RETURN(rows, driver_->Query(sql, params));
    return Status::Ok();
  }));
  return rows;
}

Result<std::vector<NodeRecord>> SqlStore::Nodes(std::string_view fleet) {
  std::vector<NodeRecord> nodes;
  TPUFLEET_TRY(Atomic(TxKind::kRead, [&]() -> Status {
    TPUFLEET_ASSIGN_OR_RETURN(
        std::vector<Row> rows,
        Read("SELECT fleet, name, provider, project, zone, type, runtime_version, capacity, "
             "queued_resource, cloud_name, request_id, state, health, spec_hash, login, port, "
             "created_at, updated_at, labels, data_disks FROM nodes WHERE ?1 = '' OR fleet = ?1 "
             "ORDER BY fleet, name",
             fleet));
    TPUFLEET_ASSIGN_OR_RETURN(
        nodes, MapRows<NodeRecord>(rows, [](const Row& q) -> Result<NodeRecord> {
          NodeRecord n;
          n.fleet = q.Text(0);
          n.name = q.Text(1);
          n.provider = q.Text(2);
          n.project = q.Text(3);
          n.zone = q.Text(4);
          n.type = q.Text(5);
          n.runtime_version = q.Text(6);
          n.capacity = q.Text(7);
          n.queued_resource = q.Text(8);
          n.cloud_name = q.Text(9);
          n.request_id = q.Text(10);
          n.state = NodeState::Parse(q.Text(11));  // stored as its wire name
          n.health = q.Text(12);
          n.spec_hash = q.Text(13);
          n.login = q.Text(14);
          n.port = static_cast<int>(q.Int(15));
          n.created_at = q.Time(16);
          n.updated_at = q.Time(17);
          TPUFLEET_ASSIGN_OR_RETURN(n.labels, LabelsFromJson(q.Text(18), n.name));
          TPUFLEET_ASSIGN_OR_RETURN(n.data_disks, DisksFromJson(q.Text(19), n.name));
          return n;
        }));
    for (NodeRecord& n : nodes) {
      TPUFLEET_ASSIGN_OR_RETURN(
          n.workers,
          Select<WorkerRecord>(
              "SELECT idx, address, hostname, host_key, setup_done, setup_digest, "
              "agent_sha256, internal_address FROM workers WHERE fleet = ?1 AND node = ?2 "
              "ORDER BY idx",
              [](const Row& w) -> Result<WorkerRecord> {
                return WorkerRecord{static_cast<int>(w.Int(0)),
                                    w.Text(1),
                                    w.Text(2),
                                    w.Text(3),
                                    w.Int(4) != 0,
                                    w.Text(5),
                                    w.Text(6),
                                    w.Text(7)};
              },
              n.fleet, n.name));
    }
    return Status::Ok();
  }));
  return nodes;
}

Status SqlStore::PutNode(const NodeRecord& n) {
  static const std::string kUpsertNode =
      sql::UpsertSql("nodes",
                     {"fleet", "name", "provider", "project", "zone", "type", "runtime_version",
                      "capacity", "queued_resource", "cloud_name", "request_id", "state", "health",
                      "spec_hash", "login", "created_at", "updated_at", "port", "labels",
                      "data_disks"},
                     2);
  return Atomic(TxKind::kWrite, [&]() -> Status {
    // The node replaces the old one whole: its workers too.
    TPUFLEET_TRY(Write("DELETE FROM workers WHERE fleet = ?1 AND node = ?2", n.fleet, n.name));
    TPUFLEET_TRY(Write(kUpsertNode, n.fleet, n.name, n.provider, n.project, n.zone, n.type,
                       n.runtime_version, n.capacity, n.queued_resource, n.cloud_name, n.request_id,
                       n.state.Name(), n.health, n.spec_hash, n.login, n.created_at, n.updated_at,
                       n.port, LabelsToJson(n.labels), DisksToJson(n.data_disks)));
    for (const WorkerRecord& w : n.workers) {
      TPUFLEET_TRY(
          Write("INSERT INTO workers (fleet, node, idx, address, hostname, host_key, "
                "setup_done, setup_digest, agent_sha256, internal_address) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                n.fleet, n.name, w.index, w.address, w.hostname, w.host_key, w.setup_done,
                w.setup_digest, w.agent_sha256, w.internal_address));
    }
    return Status::Ok();
  });
}

Status SqlStore::DeleteNode(std::string_view fleet, std::string_view name) {
  // Its workers go with it (ON DELETE CASCADE).
  return Write("DELETE FROM nodes WHERE fleet = ?1 AND name = ?2", fleet, name);
}

Result<std::vector<LeftoverRecord>> SqlStore::Leftovers(std::string_view fleet) {
  return Select<LeftoverRecord>(
      "SELECT fleet, name, zone, queued, provider, project, type, capacity, reason, "
      "last_error, since FROM leftovers WHERE ?1 = '' OR fleet = ?1 "
      "ORDER BY fleet, name, zone, queued",
      [](const Row& q) -> Result<LeftoverRecord> {
        return LeftoverRecord{q.Text(0), q.Text(1), q.Text(2), q.Int(3) != 0, q.Text(4), q.Text(5),
                              q.Text(6), q.Text(7), q.Text(8), q.Text(9),     q.Time(10)};
      },
      fleet);
}

Status SqlStore::PutLeftover(const LeftoverRecord& x) {
  static const std::string kUpsert =
      sql::UpsertSql("leftovers",
                     {"fleet", "name", "zone", "queued", "provider", "project", "type", "capacity",
                      "reason", "last_error", "since"},
                     4);
  return Write(kUpsert, x.fleet, x.name, x.zone, x.queued, x.provider, x.project, x.type,
               x.capacity, x.reason, x.last_error, x.since);
}

Status SqlStore::DeleteLeftover(const LeftoverRecord& x) {
  return Write("DELETE FROM leftovers WHERE fleet = ?1 AND name = ?2 AND zone = ?3 AND queued = ?4",
               x.fleet, x.name, x.zone, x.queued);
}

Status SqlStore::AddEvent(const EventRecord& e) {
  return Write("INSERT INTO events (time, fleet, node, kind, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
               e.time, e.fleet, e.node, e.kind, e.detail);
}

Result<std::vector<EventRecord>> SqlStore::Events(const EventQuery& query) {
  TPUFLEET_ASSIGN_OR_RETURN(
      std::vector<EventRecord> out,
      Select<EventRecord>(
          sql::EventsSql(query),
          [](const Row& q) -> Result<EventRecord> {
            return EventRecord{q.Int(0), q.Time(1), q.Text(2), q.Text(3), q.Text(4), q.Text(5)};
          },
          query.fleet, query.node, query.kind, query.since ? ToMicros(*query.since) : INT64_MIN,
          query.limit));
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace tpufleet
