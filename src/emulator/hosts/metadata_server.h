// MetadataServer: what a TPU VM's metadata server (169.254.169.254) answers, computed
// from a worker document (worker_document.h). No sockets here: the worker's init owns
// the connections and asks this class for each answer, so the protocol is unit-tested
// without I/O.
//
// Behaviour, as on Compute Engine:
//   - Every path under /computeMetadata/v1/ needs the request header
//     `Metadata-Flavor: Google` (or the legacy `X-Google-Metadata-Request: True`) and
//     is refused when `X-Forwarded-For` is present (403). `/` answers without it.
//   - A request with an `Origin` header, or whose `Host` is not metadata.google.internal,
//     metadata or 169.254.169.254 (port 80 optional), is refused (403) everywhere: it
//     comes from a web page in a browser on the worker (DNS rebinding), not a client.
//   - Every answer carries `Metadata-Flavor: Google` and an `ETag` (a hash of the body).
//   - A leaf is its text (`?alt=json`: a JSON string). A directory with a trailing
//     slash lists its entries one per line, sub-directories with a '/'; without the
//     slash it redirects (301); `?recursive=true` gives the subtree as JSON.
//   - `?wait_for_change=true` long-polls: with `last_etag=E` it answers at once when
//     the current ETag differs from E, otherwise when the value changes; after
//     `timeout_sec` (default kDefaultWaitTimeout) it answers with the current value.
//   - `instance/service-accounts/<account>/token` is an access token made up here,
//     `{"access_token":"ya29.…","expires_in":N,"token_type":"Bearer"}`, renewed before
//     it expires (the emulator's API accepts any bearer).
//
// Thread-safety: none; the init's single poll loop owns it.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "util/clock.h"
#include "util/status.h"

namespace tpufleet::emulator::hosts {

/// How long a long-poll without `timeout_sec` waits; GCE clients re-poll anyway.
inline constexpr std::chrono::seconds kDefaultWaitTimeout{600};
/// The longest `timeout_sec` honoured, so a forgotten poll does not hold a slot forever.
inline constexpr std::chrono::seconds kMaxWaitTimeout{3600};
/// Access tokens live an hour, like Google's.
inline constexpr std::chrono::seconds kTokenLifetime{3600};
/// A token with less than this left is replaced, as clients refresh about then.
inline constexpr std::chrono::seconds kTokenRenewMargin{300};

struct HttpRequest {
  std::string method;  // "GET"
  std::string target;  // "/computeMetadata/v1/instance/preempted?wait_for_change=true"
  std::map<std::string, std::string> headers;  // names in lower case
  bool keep_alive = true;
  bool has_body = false;  // Content-Length > 0 or Transfer-Encoding: such requests are refused
};

/// Parses a request head: the request line and headers, with or without the final
/// blank line. InvalidArgument when malformed.
Result<HttpRequest> ParseHttpRequestHead(std::string_view head);

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/text";
  std::string body;
  std::string etag;      // sent as ETag when not empty
  std::string location;  // sent as Location when not empty (redirects)
};

/// The bytes of `response` on the wire, with the headers GCE's server sends. A HEAD
/// answer (`head_only`) has the headers only.
std::string SerializeHttpResponse(const HttpResponse& response, bool keep_alive,
                                  bool head_only = false);

class MetadataServer {
 public:
  /// `token_seed`: random text that makes this worker's tokens unique.
  explicit MetadataServer(std::string token_seed);
  ~MetadataServer();
  MetadataServer(const MetadataServer&) = delete;
  MetadataServer& operator=(const MetadataServer&) = delete;

  /// Serves `document_json` (a worker document) from now on. InvalidArgument, and the
  /// old document kept, when it is not a JSON object with "computeMetadata".
  Status SetDocument(std::string_view document_json);

  struct Answer {
    HttpResponse response;
    bool wait = false;                     // a long-poll: park it and ask Render again later
    std::string wait_etag;                 // … answer once the response's ETag differs from this
    std::chrono::seconds wait_timeout{0};  // … or after this long, whatever it is then
  };

  /// The answer to `request` at time `now`.
  Answer Handle(const HttpRequest& request, Clock::MonoTime now);

  /// The answer to `request` now, ignoring wait_for_change: for parked long-polls.
  HttpResponse Render(const HttpRequest& request, Clock::MonoTime now);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tpufleet::emulator::hosts
