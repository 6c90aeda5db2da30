// Who is calling serve's API: the one place a request's credentials are checked, so that
// every route sees the same answer, and what the caller may do (control/access.h).
//
// The Authorization header must be `Bearer TOKEN`. Serve's own token (token.h, compared
// in constant time) is the fleet's operator, who may do everything. Any other token is
// looked up by its SHA-256 among the people's tokens (control/person_tokens.h); its
// person's rows of the users table give their roles, read at each request, so a role
// changed or a collaborator removed takes effect at once.
//
// Thread-safety: a function of its arguments and the store (thread-safe).
#pragma once

#include <map>
#include <string>

#include "control/access.h"
#include "store/store.h"
#include "util/status.h"

namespace tpufleet::server {

/// Who made a request.
struct Caller {
  std::string name;  // "operator": the holder of serve's token; else a person's name
  Access access = Access::Everything("operator");
};

/// The caller of a request with `headers` (names in lower case): serve's `token`, or a
/// person's token of `store` (null: serve's token alone is known, as in a test of the
/// transport). PermissionDenied, saying what was missing or wrong (the
/// API answers it with 401), when the request carries no token, one of nobody's, or one
/// of a person who is no longer a collaborator of any fleet; the store's errors as they
/// come.
Result<Caller> Authenticate(const std::map<std::string, std::string>& headers,
                            const std::string& token, Store* store);

}  // namespace tpufleet::server
