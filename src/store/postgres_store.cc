#include "store/postgres_store.h"

#include <cstdio>
#include <regex>

#include <libpq-fe.h>

#include "store/postgres_connect.h"
#include "store/sql_driver.h"

namespace tpufleet {
namespace {

using sql::Value;

// How long a connection attempt may take before the store reports the server
// unreachable: libpq's default is to wait for TCP's own timeout, minutes.
constexpr const char* kConnectTimeoutSeconds = "10";

// PostgreSQL's type oids for the parameters we bind (pg_type.dat).
constexpr Oid kInt8Oid = 20;
constexpr Oid kTextOid = 25;
constexpr Oid kFloat8Oid = 701;

// libpq's parsed view of a connection string: value of `keyword`, "" when unset.
class ConnInfo {
 public:
  explicit ConnInfo(const std::string& url) : opts_(PQconninfoParse(url.c_str(), nullptr)) {}
  ~ConnInfo() { PQconninfoFree(opts_); }
  ConnInfo(const ConnInfo&) = delete;
  ConnInfo& operator=(const ConnInfo&) = delete;

  bool ok() const { return opts_ != nullptr; }
  std::string Get(std::string_view keyword) const {
    for (PQconninfoOption* o = opts_; o != nullptr && o->keyword != nullptr; ++o) {
      if (keyword == o->keyword) {
        return o->val != nullptr ? o->val : "";
      }
    }
    return "";
  }

 private:
  PQconninfoOption* opts_;
};

// ?1, ?2, … (the store's portable parameters) as PostgreSQL's $1, $2, …; the store's
// statements have no '?' in their string literals.
std::string Placeholders(std::string_view sql) {
  std::string out(sql);
  for (size_t i = 0; i + 1 < out.size(); ++i) {
    if (out[i] == '?' && out[i + 1] >= '0' && out[i + 1] <= '9') {
      out[i] = '$';
    }
  }
  return out;
}

// The sql::Driver on one libpq connection.
class PostgresDriver final : public sql::Driver {
 public:
  PostgresDriver(PGconn* conn, std::string where) : conn_(conn), where_(std::move(where)) {}
  ~PostgresDriver() override { PQfinish(conn_); }

  Status Begin(sql::TxKind kind) override {
    conflicted_ = false;
    if (PQstatus(conn_) != CONNECTION_OK) {
      // The server restarted or the network dropped since the last transaction.
      PQreset(conn_);
      if (PQstatus(conn_) != CONNECTION_OK) {
        return UnavailableError("state store " + where_ +
                                ": cannot reconnect: " + PostgresConnError(conn_));
      }
    }
    if (kind == sql::TxKind::kSchema) {
      // READ COMMITTED, so that each statement after the lock sees what the migration
      // that held it before us committed.
      return Exec("BEGIN; SELECT pg_advisory_xact_lock(" + std::to_string(kMigrationLockKey) + ")");
    }
    return Exec("BEGIN ISOLATION LEVEL SERIALIZABLE");
  }

  Status Exec(const std::string& sql) override {
    PGresult* res = PQexec(conn_, sql.c_str());
    Status s = Check(res, sql);
    // COMMIT of a transaction a failed statement aborted reports success as ROLLBACK.
    if (s.ok() && sql == "COMMIT" && std::string_view(PQcmdStatus(res)) == "ROLLBACK") {
      s = InternalError("state store " + where_ +
                        ": the transaction was rolled back after an earlier error");
    }
    PQclear(res);
    return s;
  }

  Result<std::vector<sql::Row>> Query(std::string_view sql,
                                      const std::vector<Value>& params) override {
    std::vector<Oid> types;
    std::vector<std::string> texts;
    std::vector<const char*> values;
    texts.reserve(params.size());
    for (const Value& v : params) {
      if (const int64_t* n = std::get_if<int64_t>(&v)) {
        types.push_back(kInt8Oid);
        texts.push_back(std::to_string(*n));
      } else if (const double* d = std::get_if<double>(&v)) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.17g", *d);  // round-trips every double
        types.push_back(kFloat8Oid);
        texts.push_back(buf);
      } else if (const std::string* s = std::get_if<std::string>(&v)) {
        types.push_back(kTextOid);
        texts.push_back(*s);
      } else {
        types.push_back(0);  // NULL: the column gives the type
        texts.emplace_back();
      }
    }
    for (size_t i = 0; i < params.size(); ++i) {
      values.push_back(std::holds_alternative<std::monostate>(params[i]) ? nullptr
                                                                         : texts[i].c_str());
    }
    std::string text = Placeholders(sql);
    PGresult* res = PQexecParams(conn_, text.c_str(), static_cast<int>(params.size()), types.data(),
                                 values.data(), nullptr, nullptr, 0);
    std::unique_ptr<PGresult, void (*)(PGresult*)> owned(res, PQclear);
    TPUFLEET_TRY(Check(res, text));
    std::vector<sql::Row> rows;
    int columns = PQnfields(res);
    for (int r = 0, n = PQntuples(res); r < n; ++r) {
      std::vector<Value> row;
      for (int c = 0; c < columns; ++c) {
        if (PQgetisnull(res, r, c)) {
          row.emplace_back();
        } else {
          row.emplace_back(
              std::string(PQgetvalue(res, r, c), static_cast<size_t>(PQgetlength(res, r, c))));
        }
      }
      rows.emplace_back(std::move(row));
    }
    return rows;
  }

  Result<int64_t> SchemaVersion() override {
    TPUFLEET_TRY(Exec("CREATE TABLE IF NOT EXISTS tpufleet_schema (version BIGINT NOT NULL)"));
    TPUFLEET_ASSIGN_OR_RETURN(std::vector<sql::Row> rows,
                              Query("SELECT version FROM tpufleet_schema", {}));
    return rows.empty() ? 0 : rows[0].Int(0);
  }

  Status SetSchemaVersion(int64_t version) override {
    TPUFLEET_TRY(Exec("DELETE FROM tpufleet_schema"));
    Result<std::vector<sql::Row>> done =
        Query("INSERT INTO tpufleet_schema (version) VALUES (?1)", {version});
    return done.status();
  }

  std::string Ddl(std::string_view sqlite_ddl) const override {
    static const std::regex kAutoId("INTEGER PRIMARY KEY AUTOINCREMENT");
    static const std::regex kInteger("\\bINTEGER\\b");
    static const std::regex kReal("\\bREAL\\b");
    static const std::regex kText("\\bTEXT\\b");
    std::string s(sqlite_ddl);
    s = std::regex_replace(s, kAutoId, "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY");
    s = std::regex_replace(s, kInteger, "BIGINT");
    s = std::regex_replace(s, kReal, "DOUBLE PRECISION");
    return std::regex_replace(s, kText, "TEXT COLLATE \"C\"");
  }

  bool conflicted() const override { return conflicted_; }

 private:
  // OK when `res` is a success; else the error, classified by its SQLSTATE.
  Status Check(const PGresult* res, std::string_view sql) {
    ExecStatusType st = res != nullptr ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
      return Status::Ok();
    }
    const char* code = res != nullptr ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
    std::string state = code != nullptr ? code : "";
    std::string m = "state store " + where_ + ": " + PostgresConnError(conn_);
    if (state == "40001" || state == "40P01") {
      conflicted_ = true;  // serialization failure, deadlock: the whole transaction again
      return UnavailableError(m);
    }
    if (state.empty() || state.rfind("08", 0) == 0 || state.rfind("57P", 0) == 0 ||
        PQstatus(conn_) != CONNECTION_OK) {
      return UnavailableError(m + " (the connection to the server was lost; try again)");
    }
    if (state == "42501" || state.rfind("28", 0) == 0) {
      return PermissionDeniedError(m);
    }
    return InternalError(m + " [" + state + "] in: " + std::string(sql.substr(0, 200)));
  }

  PGconn* conn_;  // owned
  std::string where_;
  bool conflicted_ = false;
};

}  // namespace

std::string RedactedPostgresUrl(const std::string& url) {
  ConnInfo info(url);
  if (!info.ok()) {
    return "";
  }
  std::string user = info.Get("user");
  std::string host = info.Get("host");
  std::string port = info.Get("port");
  std::string out = "postgresql://" + (user.empty() ? "" : user + "@");
  if (!host.empty() && host[0] != '/') {
    out += host + (port.empty() ? "" : ":" + port);
  }
  out += "/" + info.Get("dbname");
  if (!host.empty() && host[0] == '/') {
    out += "?host=" + host;
  }
  return out;
}

bool PostgresUrlHasPassword(const std::string& url) {
  ConnInfo info(url);
  return info.ok() && !info.Get("password").empty();
}

std::string PostgresConnError(const PGconn* conn) {
  std::string m = PQerrorMessage(conn);
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) {
    m.pop_back();
  }
  return m;
}

Result<PostgresResult> PostgresQuery(PGconn* conn, const std::string& sql,
                                     const std::vector<std::string>& params,
                                     std::string_view what) {
  std::vector<const char*> values;
  for (const std::string& p : params) {
    values.push_back(p.c_str());
  }
  PostgresResult res(PQexecParams(conn, sql.c_str(), static_cast<int>(values.size()), nullptr,
                                  values.data(), nullptr, nullptr, 0),
                     PQclear);
  ExecStatusType st = res != nullptr ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
    return UnavailableError(std::string(what) + ": " + PostgresConnError(conn));
  }
  return res;
}

Result<PGconn*> PostgresConnect(const std::string& url) {
  std::string where = RedactedPostgresUrl(url);
  if (where.empty()) {
    return InvalidArgumentError(
        "state store: not a PostgreSQL URL (postgresql://user@host:port/db "
        "or postgresql:///db?host=/socket/dir)");
  }
  std::string idle = std::to_string(kKeepaliveIdle.count());
  std::string interval = std::to_string(kKeepaliveInterval.count());
  std::string count = std::to_string(kKeepaliveCount);
  // The URL's own settings win over these defaults (libpq: later keywords override).
  const char* keys[] = {"connect_timeout",
                        "application_name",
                        "keepalives_idle",
                        "keepalives_interval",
                        "keepalives_count",
                        "dbname",
                        nullptr};
  const char* values[] = {kConnectTimeoutSeconds, "tpufleet",  idle.c_str(), interval.c_str(),
                          count.c_str(),          url.c_str(), nullptr};
  PGconn* conn = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (conn == nullptr) {
    return InternalError("state store " + where + ": out of memory");
  }
  // Notices (CREATE TABLE IF NOT EXISTS's "already exists, skipping") are not errors.
  PQsetNoticeProcessor(
      conn, [](void*, const char*) {}, nullptr);
  if (PQstatus(conn) == CONNECTION_OK) {
    return conn;
  }
  std::string m = PostgresConnError(conn);
  PQfinish(conn);
  std::string text = "state store " + where + ": cannot connect: " + m;
  if (m.find("authentication") != std::string::npos || m.find("password") != std::string::npos ||
      m.find("permission") != std::string::npos) {
    return PermissionDeniedError(text);
  }
  return UnavailableError(text);
}

Result<std::unique_ptr<PostgresStore>> PostgresStore::Open(const std::string& url) {
  TPUFLEET_ASSIGN_OR_RETURN(PGconn * conn, PostgresConnect(url));
  std::string where = RedactedPostgresUrl(url);
  std::unique_ptr<PostgresStore> store(
      new PostgresStore(std::make_unique<PostgresDriver>(conn, where), where));
  TPUFLEET_TRY(store->Migrate());
  return store;
}

}  // namespace tpufleet
