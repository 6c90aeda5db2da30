#include "store/sqlite_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iterator>

#include <nlohmann/json.hpp>

#include "store/sqlite_internal.h"
#include "util/file.h"

namespace tpufleet {
namespace {

using sqlite_internal::FromMicros;
using sqlite_internal::RunStatement;
using sqlite_internal::SelectAll;
using sqlite_internal::SqliteError;
using sqlite_internal::Stmt;
using sqlite_internal::ToMicros;

// How long a writer waits for another process's transaction before giving up. An
// `up` step holds the lock for milliseconds; seconds cover a loaded machine.
constexpr int kBusyTimeoutMs = 10000;

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
};
// The schema this build writes.
constexpr int kSchemaVersion = static_cast<int>(std::size(kSchemaSteps));

std::string LabelsToJson(const std::map<std::string, std::string>& labels) {
  return nlohmann::json(labels).dump();
}

// The labels column as written by LabelsToJson; Internal when it is anything else (a
// file edited by hand).
Result<std::map<std::string, std::string>> LabelsFromJson(const std::string& text,
                                                          const std::string& node) {
  Status bad = InternalError("state store: the labels of node " + node +
                             " are not a JSON object of strings");
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    return bad;
  }
  std::map<std::string, std::string> labels;
  for (const auto& [key, value] : j.items()) {
    if (!value.is_string()) {
      return bad;
    }
    labels[key] = value.get<std::string>();
  }
  return labels;
}

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
    // Create it 0600 ourselves: SQLite would use the umask. Its -wal and -shm files
    // copy the database file's permissions.
    // Never through a link, and only this user's, unwritable by others: a planted link
    // would put the database where someone else chose, a planted database would feed
    // tpufleet their addresses and host keys (issue 10).
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno == ELOOP) {
      return FailedPreconditionError("state store: " + path +
                                     " is a symbolic link; the database must be a file");
    }
    if (fd < 0) {
      return PermissionDeniedError("state store: cannot open " + path + ": " +
                                   std::strerror(errno));
    }
    struct stat st {};
    int stat_rc = ::fstat(fd, &st);
    ::close(fd);
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
  std::unique_ptr<SqliteStore> store(new SqliteStore(db));
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  TPUFLEET_TRY(store->Exec("PRAGMA foreign_keys = ON"));
  if (path != ":memory:") {
    TPUFLEET_TRY(store->Exec("PRAGMA journal_mode = WAL"));
  }
  // Schema: read the version and create or migrate inside one write transaction, so two
  // processes opening a new file at once cannot both create it.
  TPUFLEET_TRY(store->Transaction([&]() -> Status {
    TPUFLEET_ASSIGN_OR_RETURN(
        std::vector<int64_t> versions,
        SelectAll<int64_t>(db, "PRAGMA user_version",
                           [](const Stmt& q) -> Result<int64_t> { return q.Int(0); }));
    int64_t v = versions.empty() ? 0 : versions[0];
    if (v > kSchemaVersion) {
      return FailedPreconditionError(path + " was written by a newer tpufleet (schema " +
                                     std::to_string(v) + ", this one knows " +
                                     std::to_string(kSchemaVersion) + "); upgrade tpufleet");
    }
    if (v == kSchemaVersion) {
      return Status::Ok();
    }
    for (int64_t step = v; step < kSchemaVersion; ++step) {
      TPUFLEET_TRY(store->Exec(kSchemaSteps[step]));
    }
    // user_version takes no bound parameter; the number is ours, not the user's.
    return store->Exec(("PRAGMA user_version = " + std::to_string(kSchemaVersion)).c_str());
  }));
  return store;
}

SqliteStore::~SqliteStore() { sqlite3_close(db_); }

Status SqliteStore::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : "unknown error";
    sqlite3_free(err);
    return SqliteError(db_, m);
  }
  return Status::Ok();
}

Status SqliteStore::Transaction(const std::function<Status()>& body) {
  std::lock_guard<std::recursive_mutex> l(mu_);
  if (in_transaction_) {
    return InternalError("state store: nested transaction");
  }
  // IMMEDIATE takes the write lock now, so the body never fails half-way on a lock.
  TPUFLEET_TRY(Exec("BEGIN IMMEDIATE"));
  in_transaction_ = true;
  Status s = body();
  in_transaction_ = false;
  if (!s.ok()) {
    (void)Exec("ROLLBACK");
    return s;
  }
  if (Status c = Exec("COMMIT"); !c.ok()) {
    (void)Exec("ROLLBACK");
    return c;
  }
  return Status::Ok();
}

Result<std::vector<NodeRecord>> SqliteStore::Nodes(std::string_view fleet) {
  std::lock_guard<std::recursive_mutex> l(mu_);
  TPUFLEET_ASSIGN_OR_RETURN(
      std::vector<NodeRecord> nodes,
      SelectAll<NodeRecord>(
          db_,
          "SELECT fleet, name, provider, project, zone, type, runtime_version, capacity, "
          "queued_resource, cloud_name, request_id, state, health, spec_hash, login, port, "
          "created_at, updated_at, labels FROM nodes WHERE ?1 = '' OR fleet = ?1 "
          "ORDER BY fleet, name",
          [](const Stmt& q) -> Result<NodeRecord> {
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
            n.created_at = FromMicros(q.Int(16));
            n.updated_at = FromMicros(q.Int(17));
            TPUFLEET_ASSIGN_OR_RETURN(n.labels, LabelsFromJson(q.Text(18), n.name));
            return n;
          },
          fleet));
  for (NodeRecord& n : nodes) {
    TPUFLEET_ASSIGN_OR_RETURN(
        n.workers,
        SelectAll<WorkerRecord>(
            db_,
            "SELECT idx, address, hostname, host_key, setup_done, setup_digest, agent_sha256, "
            "internal_address FROM workers WHERE fleet = ?1 AND node = ?2 ORDER BY idx",
            [](const Stmt& w) -> Result<WorkerRecord> {
              return WorkerRecord{static_cast<int>(w.Int(0)), w.Text(1), w.Text(2), w.Text(3),
                                  w.Int(4) != 0, w.Text(5), w.Text(6), w.Text(7)};
            },
            n.fleet, n.name));
  }
  return nodes;
}

Status SqliteStore::PutNode(const NodeRecord& n) {
  std::lock_guard<std::recursive_mutex> l(mu_);
  auto write = [&]() -> Status {
    // REPLACE deletes the old row first, and with it (ON DELETE CASCADE) its workers.
    TPUFLEET_TRY(RunStatement(
        db_,
        "INSERT OR REPLACE INTO nodes (fleet, name, provider, project, zone, type, "
        "runtime_version, capacity, queued_resource, cloud_name, request_id, state, "
        "health, spec_hash, login, created_at, updated_at, port, labels) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, "
        "?17, ?18, ?19)",
        n.fleet, n.name, n.provider, n.project, n.zone, n.type, n.runtime_version, n.capacity,
        n.queued_resource, n.cloud_name, n.request_id, n.state.Name(), n.health, n.spec_hash,
        n.login, n.created_at, n.updated_at, n.port, LabelsToJson(n.labels)));
    for (const WorkerRecord& w : n.workers) {
      TPUFLEET_TRY(RunStatement(
          db_,
          "INSERT INTO workers (fleet, node, idx, address, hostname, host_key, setup_done, "
          "setup_digest, agent_sha256, internal_address) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
          n.fleet, n.name, w.index, w.address, w.hostname, w.host_key, w.setup_done,
          w.setup_digest, w.agent_sha256, w.internal_address));
    }
    return Status::Ok();
  };
  return in_transaction_ ? write() : Transaction(write);
}

Status SqliteStore::DeleteNode(std::string_view fleet, std::string_view name) {
  std::lock_guard<std::recursive_mutex> l(mu_);
  return RunStatement(db_, "DELETE FROM nodes WHERE fleet = ?1 AND name = ?2", fleet, name);
}

Result<std::vector<LeftoverRecord>> SqliteStore::Leftovers(std::string_view fleet) {
  std::lock_guard<std::recursive_mutex> l(mu_);
  return SelectAll<LeftoverRecord>(
      db_,
      "SELECT fleet, name, zone, queued, provider, project, type, capacity, reason, "
      "last_error, since FROM leftovers WHERE ?1 = '' OR fleet = ?1 "
      "ORDER BY fleet, name, zone, queued",
      [](const Stmt& q) -> Result<LeftoverRecord> {
        return LeftoverRecord{q.Text(0), q.Text(1), q.Text(2), q.Int(3) != 0, q.Text(4), q.Text(5),
                              q.Text(6), q.Text(7), q.Text(8), q.Text(9), FromMicros(q.Int(10))};
      },
      fleet);
}

Status SqliteStore::PutLeftover(const LeftoverRecord& x) {
  std::lock_guard<std::recursive_mutex> l(mu_);
  return RunStatement(db_,
                      "INSERT OR REPLACE INTO leftovers (fleet, name, zone, queued, provider, "
                      "project, type, capacity, reason, last_error, since) "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                      x.fleet, x.name, x.zone, x.queued, x.provider, x.project, x.type,
                      x.capacity, x.reason, x.last_error, x.since);
}

Status SqliteStore::DeleteLeftover(const LeftoverRecord& x) {
  std::lock_guard<std::recursive_mutex> l(mu_);
  return RunStatement(
      db_, "DELETE FROM leftovers WHERE fleet = ?1 AND name = ?2 AND zone = ?3 AND queued = ?4",
      x.fleet, x.name, x.zone, x.queued);
}

Status SqliteStore::AddEvent(const EventRecord& e) {
  std::lock_guard<std::recursive_mutex> l(mu_);
  return RunStatement(
      db_, "INSERT INTO events (time, fleet, node, kind, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
      e.time, e.fleet, e.node, e.kind, e.detail);
}

std::string sqlite_internal::EventsSql(const EventQuery& query) {
  std::string sql = "SELECT id, time, fleet, node, kind, detail FROM events WHERE time >= ?4";
  if (!query.fleet.empty()) {
    sql += " AND fleet = ?1";
  }
  if (!query.node.empty()) {
    sql += " AND node = ?2";
  }
  if (!query.kind.empty()) {
    sql += " AND kind = ?3";
  }
  return sql + " ORDER BY id DESC LIMIT ?5";
}

Result<std::vector<EventRecord>> SqliteStore::Events(const EventQuery& query) {
  std::lock_guard<std::recursive_mutex> l(mu_);
  TPUFLEET_ASSIGN_OR_RETURN(
      std::vector<EventRecord> out,
      SelectAll<EventRecord>(
          db_, sqlite_internal::EventsSql(query).c_str(),
          [](const Stmt& q) -> Result<EventRecord> {
            return EventRecord{q.Int(0), FromMicros(q.Int(1)), q.Text(2), q.Text(3), q.Text(4),
                               q.Text(5)};
          },
          query.fleet, query.node, query.kind,
          query.since ? ToMicros(*query.since) : INT64_MIN, query.limit));
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace tpufleet
