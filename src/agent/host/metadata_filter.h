// What the metadata guard's proxy (metadata_proxy.h) lets through to the worker's
// metadata server for an account without sudo: everything but the credentials. Pure
// functions, so the decision is tested apart from any socket.
//
// Refused (the request never reaches the server):
//   - below any `service-accounts` segment, everything but the listings of the accounts
//     and of one account (names only: "token" is a name there, not a token) and the
//     leaves `email`, `aliases` and `scopes`: so `…/token`, `…/identity`, the legacy
//     `…/acquire` and whatever a future server adds below an account;
//   - any method but GET (HEAD, PUT to guest attributes, where host keys are published,
//     and the rest), and any request with a body;
//   - a target that is not a plain path ("http://…" absolute form, "*"), or with bytes
//     outside printable ASCII once decoded, or more than kMaxDecodeRounds layers of
//     percent-encoding.
// The path is judged as a server might read it, whichever reading it picks: percent-
// decoded (repeatedly: `%252e` is `.` to a server that decodes twice), `\` read as `/`,
// empty and `.` segments dropped, `..` taking the segment before it away, `;params`
// cut, letters compared in lower case, whatever the prefix (`/computeMetadata/v1/`,
// `/computeMetadata/v1beta1/`, the legacy `/0.1/meta-data/`).
//
// Recursive listings pass: Google's server and the emulator's leave tokens out of them
// (a token exists only at its own path; `service-accounts/?recursive=true` lists each
// account's aliases, email and scopes). The proxy still checks every answer's body with
// CarriesCredential and refuses one that holds an access token.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace tpufleet::agent::host {

/// Percent-decoding is repeated until nothing changes, at most this many times; a path
/// still changing after that is refused (no client encodes a path four times).
inline constexpr int kMaxDecodeRounds = 4;

/// A request head as the proxy reads it: the request line, and the headers in the order
/// they came (names as written).
struct ProxiedHead {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;
  bool has_body = false;  // Content-Length above 0, or any Transfer-Encoding
};
/// `head` (through its blank line) as a ProxiedHead; InvalidArgument when it is not an
/// HTTP/1.x request head.
Result<ProxiedHead> ParseProxiedHead(std::string_view head);

struct MetadataVerdict {
  bool allow = false;
  int code = 403;     // when refused: 403, or 405 for a method, 400 for a bad head
  std::string what;   // when refused: what it asked for, for the message ("a token")
};
/// Whether `head` may go to the metadata server (see above).
MetadataVerdict DecideMetadataRequest(const ProxiedHead& head);

/// The path segments of `target` as judged above (lower case, dot segments resolved),
/// or InvalidArgument for a target refused as unreadable. Exposed for tests.
Result<std::vector<std::string>> NormalizedSegments(std::string_view target);

/// Whether an answer's body holds an access token ("access_token" or Google's "ya29."
/// prefix, in any case).
bool CarriesCredential(std::string_view body);

/// The refusal's body: one line naming tpufleet, `user` and what was refused.
std::string RefusalText(const MetadataVerdict& verdict, const std::string& user);

}  // namespace tpufleet::agent::host
