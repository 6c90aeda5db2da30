// A team server's per-person tokens (issue 16): `tpufleet invite NAME` makes one for a
// collaborator, whose own tpufleet presents it to `serve` (Authorization: Bearer), which
// finds the person by the token's SHA-256 (server/auth.h). The store keeps the digest
// only, so a copy of the store lets no one in; the token itself is shown once, to the
// admin who made it, and never logged.
//
// Thread-safety: stateless functions over a Store (thread-safe).
#pragma once

#include <string>
#include <string_view>

#include "store/store.h"
#include "util/clock.h"
#include "util/status.h"

namespace tpufleet {

/// What every person's token starts with (serve's own starts with tpufleet-serve-).
inline constexpr std::string_view kPersonTokenPrefix = "tpufleet-person-";

/// The store's key of `token`: its SHA-256 in lowercase hex.
std::string PersonTokenDigest(std::string_view token);

/// A fresh token for `person` (a collaborator of some fleet), kept by its digest with
/// `label`; earlier tokens of `person` stay valid unless `replace`, which forgets them.
/// Internal when the kernel gives no randomness; the store's errors as they come.
Result<std::string> IssuePersonToken(Store& store, const std::string& person,
                                     const std::string& label, Clock::WallTime now,
                                     bool replace);

/// The person `token` belongs to; PermissionDenied when it is not one of the store's.
Result<TokenRecord> FindPersonToken(Store& store, std::string_view token);

}  // namespace tpufleet
