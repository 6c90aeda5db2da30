#include "store/postgres_leader.h"

#include <libpq-fe.h>

#include "store/postgres_connect.h"

namespace tpufleet {
namespace {

// Runs `sql` on `conn`: whether it returned a row.
Result<bool> AnyRow(PGconn* conn, const std::string& sql) {
  TPUFLEET_ASSIGN_OR_RETURN(PostgresResult res, PostgresQuery(conn, sql, {}, "serve leadership"));
  return PQntuples(res.get()) > 0;
}

}  // namespace

Result<std::unique_ptr<PostgresLeader>> PostgresLeader::Open(const std::string& url) {
  TPUFLEET_ASSIGN_OR_RETURN(PGconn * conn, PostgresConnect(url));
  std::unique_ptr<PostgresLeader> leader(new PostgresLeader(conn));
  // The server's side of the keepalives: it ends the session of a leader cut off from it,
  // and so frees the lock for another.
  for (const auto& [name, value] :
       {std::pair{"tcp_keepalives_idle", static_cast<long long>(kKeepaliveIdle.count())},
        std::pair{"tcp_keepalives_interval", static_cast<long long>(kKeepaliveInterval.count())},
        std::pair{"tcp_keepalives_count", static_cast<long long>(kKeepaliveCount)}}) {
    TPUFLEET_TRY(AnyRow(conn, std::string("SET ") + name + " = " + std::to_string(value)).status());
  }
  return leader;
}

PostgresLeader::~PostgresLeader() {
  PQfinish(conn_);
}

Result<bool> PostgresLeader::TryLead() {
  if (leading_ || lost_) {
    return StillLeading();
  }
  TPUFLEET_ASSIGN_OR_RETURN(leading_, AnyRow(conn_, "SELECT 1 WHERE pg_try_advisory_lock(" +
                                                        std::to_string(kLeaderLockKey) + ")"));
  return leading_;
}

bool PostgresLeader::StillLeading() {
  if (leading_ && !lost_ && (!AnyRow(conn_, "SELECT 1").ok() || PQstatus(conn_) != CONNECTION_OK)) {
    lost_ = true;
  }
  return leading_ && !lost_;
}

}  // namespace tpufleet
