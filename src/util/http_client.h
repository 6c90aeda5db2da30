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
#include <functional>
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
/// HttpRequest::pinned_cert's value that accepts any certificate (trust on first use:
/// the caller records HttpResponse::cert_fingerprint and pins it from then on).
inline constexpr const char* kAnyCertificate = "any";

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::map<std::string, std::string> headers;  // e.g. {"Authorization", "Bearer …"}
  std::string body;
  // Whole request, connect to last byte. Long enough for a metadata long-poll. Zero:
  // none (a stream, bounded by idle_timeout instead).
  std::chrono::milliseconds timeout{30000};
  // A server that sends nothing for this long (once connected) ends the transfer:
  // Timeout. Zero: none. For streams that run for as long as their server has
  // something to say, and send a keep-alive while they have not.
  std::chrono::milliseconds idle_timeout{0};
  // When set, a 2xx response's body is given here piece by piece as it arrives
  // (HttpResponse::body stays empty), and max_response_bytes does not apply: nothing is
  // held. Returning false stops the transfer (FailedPrecondition "stopped"). Another
  // status's body is collected as usual. Called on Send's thread.
  std::function<bool(std::string_view piece)> on_body = nullptr;
  // Asked about once a second (more often while bytes flow) during the transfer; true
  // stops it (FailedPrecondition "stopped"): a Ctrl-C while a stream is quiet.
  std::function<bool()> stop = nullptr;
  // A body larger than this ends the transfer at once with an error (see
  // kMaxHttpResponseBytes); a caller that expects more may raise it.
  size_t max_response_bytes = kMaxHttpResponseBytes;
  // For a server with a certificate of its own making (tpufleet serve's): instead of the
  // system's CAs and the host name, its certificate must be this one, by its
  // Sha256Fingerprint (util/fingerprint.h) of the DER bytes; checked in the handshake,
  // before anything is sent. kAnyCertificate: any certificate. Empty: the system's CAs,
  // as for every other server. REQUIRES (when set): an https URL.
  std::string pinned_cert;
};

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string cert_fingerprint = {};  // with pinned_cert: the server's certificate's
};

class HttpClient {
 public:
  HttpClient() = default;
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;
  virtual ~HttpClient() = default;

  /// Sends `request` and returns the response, whatever its status (its body given to
  /// request.on_body instead, when set and the status is 2xx). A response whose
  /// body passes request.max_response_bytes, or whose headers pass kMaxHttpHeaderBytes,
  /// is cut off there: Internal, saying so (retrying would fetch it again). A certificate
  /// other than request.pinned_cert: PermissionDenied "… the server's TLS certificate is
  /// SHA256:…, not the pinned SHA256:…", and nothing was sent.
  virtual Result<HttpResponse> Send(const HttpRequest& request) = 0;
};

class CurlHttpClient final : public HttpClient {
 public:
  CurlHttpClient();
  Result<HttpResponse> Send(const HttpRequest& request) override;
};

}  // namespace tpufleet
