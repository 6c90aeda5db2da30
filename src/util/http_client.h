// HttpClient: the one way tpufleet makes HTTP requests, so the GCP client, the
// emulator's command line and later the agent share timeouts, redaction and error
// mapping, and tests can swap in a fake.
//
// Transport failures map to Status codes by what the caller does next: connection
// refused, DNS and TLS errors are Unavailable (retry or report), a timeout is Timeout.
// An HTTP error status is NOT a failure here: it comes back in HttpResponse::status for
// the caller to interpret (a 404 means different things to different callers).
//
// CurlHttpClient is the real implementation (libcurl, TLS through OpenSSL). No libcurl
// type appears in this header. Thread-safety: Send may be called from several threads
// at once; each call uses its own handle.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <string>

#include "util/status.h"

namespace tpufleet {

/// The largest response body Send accepts by default. The TPU API's largest answers
/// (a list page of 1000 nodes of a pod, each with hundreds of network endpoints) are a
/// few MiB; a server that sends more is broken or hostile, and is stopped before it
/// fills memory.
inline constexpr size_t kMaxHttpResponseBytes = 64u << 20;
/// All of a response's header lines together; real ones are a few KiB. (libcurl 7.88
/// stops at 300 KiB with a vaguer error; other versions may not stop at all.)
inline constexpr size_t kMaxHttpHeaderBytes = 256u << 10;

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::map<std::string, std::string> headers;  // e.g. {"Authorization", "Bearer …"}
  std::string body;
  // Whole request, connect to last byte. Long enough for a metadata long-poll.
  std::chrono::milliseconds timeout{30000};
  // A body larger than this ends the transfer at once with an error (see
  // kMaxHttpResponseBytes); a caller that expects more may raise it.
  size_t max_response_bytes = kMaxHttpResponseBytes;
};

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

class HttpClient {
 public:
  HttpClient() = default;
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;
  virtual ~HttpClient() = default;

  /// Sends `request` and returns the response, whatever its status. A response whose
  /// body passes request.max_response_bytes, or whose headers pass kMaxHttpHeaderBytes,
  /// is cut off there: Internal, saying so (retrying would fetch it again).
  virtual Result<HttpResponse> Send(const HttpRequest& request) = 0;
};

class CurlHttpClient final : public HttpClient {
 public:
  CurlHttpClient();
  Result<HttpResponse> Send(const HttpRequest& request) override;
};

}  // namespace tpufleet
