// Opening a libpq connection the way every PostgreSQL connection of the store is opened
// (the store's, the leader's): defaults for what the URL leaves unset, notices silenced,
// errors classified and naming the server without the password. Private to store/.
//
// Thread-safety: stateless.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

struct pg_conn;
struct pg_result;

namespace tpufleet {

/// TCP keepalives on every connection (libpq's side; the leader sets the server's too):
/// a peer gone without closing (a partition, a machine lost) is found out after about
/// idle + interval × count = 11 s instead of the kernel's two hours.
inline constexpr std::chrono::seconds kKeepaliveIdle{5};
inline constexpr std::chrono::seconds kKeepaliveInterval{2};
inline constexpr int kKeepaliveCount = 3;

/// Connects to `url`; the caller owns the connection (PQfinish). Unavailable when the
/// server cannot be reached, PermissionDenied when it refuses the user, InvalidArgument
/// for a URL libpq cannot parse.
Result<pg_conn*> PostgresConnect(const std::string& url);

/// The connection's last error, without libpq's trailing newline.
std::string PostgresConnError(const pg_conn* conn);

/// A query's result, cleared with it.
using PostgresResult = std::unique_ptr<pg_result, void (*)(pg_result*)>;

/// Runs one statement `sql` with text parameters `params` ($1…) on `conn`: its result,
/// or Unavailable "`what`: the server's error" (for the connections outside the store's
/// driver: the state lock's, the leader's).
Result<PostgresResult> PostgresQuery(pg_conn* conn, const std::string& sql,
                                     const std::vector<std::string>& params, std::string_view what);

}  // namespace tpufleet
