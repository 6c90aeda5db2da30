// The bearer token of `tpufleet serve`'s HTTP API: STATE/serve/token, made at serve's
// first start and kept across restarts, so a client configured once keeps working.
//
// The file is the credential: whoever reads it may call the API. So the directory
// STATE/serve is made 0700 and must be the running user's and writable by no one else,
// and the file must be a regular file of the running user with no permission for its
// group or others (0600); anything else is refused with a message naming the path and
// what is wrong, and serve does not start. The token is never logged or put in argv.
//
// Thread-safety: stateless functions.
#pragma once

#include <string>
#include <string_view>

#include "util/status.h"

namespace tpufleet::server {

/// What every serve token starts with, so a leaked one is recognised for what it is.
inline constexpr std::string_view kServeTokenPrefix = "tpufleet-serve-";

/// STATE/serve/token.
std::string ServeTokenPath(const std::string& state_dir);

/// The token of STATE/serve/token, made (0600, `kServeTokenPrefix` then 32 random bytes
/// in base64url) when the file does not exist. FailedPrecondition when the directory or
/// the file is another user's, may be read or written by others, or is not a regular
/// file; InvalidArgument when the file holds no serve token.
Result<std::string> LoadOrMakeServeToken(const std::string& state_dir);

}  // namespace tpufleet::server
