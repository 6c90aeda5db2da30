// What the team server writes to its audit log (store: audit table, AuditRecord) for a
// request: who, what, how it ended. `tpufleet audit` reads it back.
//
// What is kept of a command line is bounded and never holds a secret: the values of
// --env (NAME=VALUE: the name stays), of any flag whose name speaks of a token, secret,
// password or key, and every word after `--` (a job's command line, which may carry
// anything) are replaced by "…". No token ever reaches the log: a request with a bad
// one is logged as person "?", outcome "unauthenticated".
//
// Thread-safety: stateless functions over a Store (thread-safe).
#pragma once

#include <string>
#include <vector>

#include "store/store.h"
#include "util/clock.h"

namespace tpufleet::server {

/// Most bytes of an audit line's action; a longer one is cut and ends with "…".
inline constexpr size_t kMaxAuditActionBytes = 512;

/// `argv` as an audit line's action: joined by spaces, secrets replaced (above), at most
/// kMaxAuditActionBytes.
std::string AuditAction(const std::vector<std::string>& argv);

/// Writes one audit line. A store that cannot take it is logged as a warning, and the
/// request is answered all the same: the log records what the server did, it does not
/// gate it (a store that is down fails the request's own reads anyway).
void WriteAudit(Store& store, Clock::WallTime now, const std::string& person,
                const std::string& action, const std::string& outcome);

}  // namespace tpufleet::server
