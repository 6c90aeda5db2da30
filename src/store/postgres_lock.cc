#include "store/postgres_lock.h"

#include <libpq-fe.h>

#include "store/postgres_connect.h"

namespace tpufleet {
namespace {

constexpr std::string_view kWhat = "the state lock";

}  // namespace

Result<std::unique_ptr<PostgresStateLock>> PostgresStateLock::Take(const std::string& url,
                                                                   const std::string& who) {
  TPUFLEET_ASSIGN_OR_RETURN(PGconn * conn, PostgresConnect(url));
  std::unique_ptr<PostgresStateLock> lock(new PostgresStateLock(conn));
  const std::string key = std::to_string(kStateLockKey);
  // application_name is at most 63 bytes (NAMEDATALEN); the server cuts the rest.
  TPUFLEET_TRY(PostgresQuery(conn, "SELECT set_config('application_name', $1, false)", {who}, kWhat)
                   .status());
  TPUFLEET_ASSIGN_OR_RETURN(
      PostgresResult took,
      PostgresQuery(conn, "SELECT pg_try_advisory_lock(" + key + ")", {}, kWhat));
  if (PQntuples(took.get()) == 1 && std::string(PQgetvalue(took.get(), 0, 0)) == "t") {
    return lock;
  }
  // A bigint key is classid (its high half) and objid (its low half), objsubid 1.
  TPUFLEET_ASSIGN_OR_RETURN(
      PostgresResult holder,
      PostgresQuery(
          conn,
          "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
          "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 AND l.objsubid = 1 "
          "AND l.objid = " +
              key +
              " AND l.database = (SELECT oid FROM pg_database "
              "WHERE datname = current_database())",
          {}, kWhat));
  std::string name = PQntuples(holder.get()) == 1 ? PQgetvalue(holder.get(), 0, 0) : "";
  return FailedPreconditionError(
      (name.empty() ? std::string("another tpufleet") : "`" + name + "`") +
      " is changing the fleet (it holds the state lock of the PostgreSQL store); wait for it "
      "to finish");
}

PostgresStateLock::~PostgresStateLock() {
  PQfinish(conn_);
}

}  // namespace tpufleet
