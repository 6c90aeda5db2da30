// PlainHttpClient: the agent's HttpClient (util/http_client.h), for the metadata server.
//
// util's CurlHttpClient loads libcurl with dlopen, which the agent, a static binary,
// cannot do; and the only server the agent talks to is the worker's metadata server,
// plain HTTP on a link-local address. So this client speaks just that: HTTP/1.0 GET
// (or any method without a body) to http://IPV4[:PORT]/PATH, one connection per
// request, the answer read to the end (Content-Length when given, else until the
// server closes; HTTP/1.0 keeps chunked encoding away). No DNS (getaddrinfo would need
// NSS): the host must be an IPv4 address; callers name 169.254.169.254 or
// $GCE_METADATA_IP, as JAX does. A Host header in the request replaces the URL's
// (the metadata server wants "metadata.google.internal").
//
// Errors as HttpClient says: Unavailable when the connection is refused or the URL's
// host is unreachable, Timeout past request.timeout (connect to last byte),
// InvalidArgument for a URL it cannot speak to, Internal for a malformed answer or one
// past max_response_bytes.
//
// The pieces of Send below the class are shared with LoopHttpGet (loop_http.h), the same
// exchange on an event loop.
//
// Thread-safety: Send may be called from several threads at once; the functions are pure.
#pragma once

#include <netinet/in.h>

#include <string>

#include "util/http_client.h"
#include "util/status.h"

namespace tpufleet::agent::host {

/// Where a URL points: an IPv4 address and port, the Host header's value, the path.
struct HttpTarget {
  sockaddr_in addr{};
  std::string host;  // as the URL gives it, for the Host header
  std::string path;  // with the query
};
/// `url` as http://IPV4[:PORT]/PATH; InvalidArgument for anything else (above).
Result<HttpTarget> ParseHttpTarget(const std::string& url);
/// The request's head (HTTP/1.0, no body): the request line, its headers, a Host header
/// from the URL unless it has one.
std::string HttpRequestText(const HttpRequest& request, const HttpTarget& target);
/// Internal when `raw` (what the server sent so far) is past the request's
/// max_response_bytes and kMaxHttpHeaderBytes: the answer is cut off there.
Status CheckHttpAnswerSize(const std::string& raw, const HttpRequest& request);
/// Whether `raw` (what the server sent so far) holds a whole answer by its
/// Content-Length (without one, only the server's close ends it).
bool HttpAnswerComplete(const std::string& raw);
/// The answer in `raw`, read to its end; Internal for a malformed one (`url` names it).
Result<HttpResponse> ParseHttpAnswer(const std::string& raw, const std::string& url);

class PlainHttpClient final : public HttpClient {
 public:
  PlainHttpClient() = default;
  Result<HttpResponse> Send(const HttpRequest& request) override;
};

}  // namespace tpufleet::agent::host
