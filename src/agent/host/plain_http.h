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
// Thread-safety: Send may be called from several threads at once.
#pragma once

#include "util/http_client.h"

namespace tpufleet::agent::host {

class PlainHttpClient final : public HttpClient {
 public:
  PlainHttpClient() = default;
  Result<HttpResponse> Send(const HttpRequest& request) override;
};

}  // namespace tpufleet::agent::host
