// HttpServer: serves an ApiServer over HTTP/1.1 on a loopback address with
// cpp-httplib, and runs the threads that keep it moving:
//   - httplib's pool answers requests (each through ApiServer::Handle);
//   - a ticker thread calls ApiServer::Tick every `tick_interval`, so operations finish
//     on time even when no client is polling;
//   - `host_threads` threads run the queued WorkerHosts calls (Boot of a big node takes
//     seconds; several nodes boot at once, one call at a time per node).
//
// Typical use (what `tpufleet emulator start` and the fidelity server do):
//
//   ApiServer api(config, clock, &hosts, catalog);
//   HttpServer http(&api, {.port = 0});
//   TPUFLEET_ASSIGN_OR_RETURN(int port, http.Start());   // then print it
//   ...
//   http.Stop();   // stops serving, destroys every worker host, joins the threads
//
// Web pages are kept out: a page open in a browser on this machine must not reach the
// emulator, neither by a cross-site request nor by DNS rebinding (a name of the page's
// site that resolves to 127.0.0.1). Every request first passes RefuseWebRequest
// (below, over httpd/bounded_server.h's check, shared with `tpufleet serve`), and those
// it refuses get 403; then ApiServer requires a token (config.h).
//
// Sizes are bounded before a request reaches the ApiServer: a body over
// kMaxRequestBodyBytes gets 413 in Google's error envelope without being read; httplib
// refuses a request line or header line over 8 KiB (its compiled-in limits), and the
// connection reads at most kMaxRequestBodyBytes + httpd::kMaxRequestHeadBytes per
// request (httpd/bounded_server.h), which bounds how many headers may come.
//
// Ownership: the ApiServer must outlive the HttpServer. Thread-safety: Start and Stop
// are for one controlling thread; port() may be read from any thread after Start.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "emulator/api_server.h"
#include "emulator/http_types.h"
#include "util/status.h"

namespace tpufleet::emulator {

/// Largest request body served: twice GCE's 512 KiB cap on an instance's metadata, the
/// largest thing a request carries (ssh-keys, startup scripts).
inline constexpr size_t kMaxRequestBodyBytes = 1 << 20;

/// The 413 for a body over kMaxRequestBodyBytes, in Google's error envelope.
HttpResponse PayloadTooLarge();

struct HttpServerOptions {
  // Only loopback by design: the emulator is for programs on this machine.
  std::string address = "127.0.0.1";
  // 0 picks a free port; Start returns it.
  int port = 0;
  // Requests handled at once (httplib's pool). Clients poll operations concurrently.
  int request_threads = 8;
  // WorkerHosts calls run at once (different nodes; one node's calls are serialised).
  int host_threads = 4;
  // How often pending transitions are advanced when nobody asks: well under the
  // shortest fast operation time (200 ms) so operations end close to their due time.
  std::chrono::milliseconds tick_interval{50};
  // Longest Stop waits for queued WorkerHosts calls (Destroy of every node) to finish.
  std::chrono::milliseconds drain_timeout{60000};
};

/// The 403 (Google's error envelope, PERMISSION_DENIED) for a request a web page may
/// have sent, or nullopt to serve it. Refused: any request with an Origin header (no
/// API client sends one; browsers do on cross-site and on POST requests), and one whose
/// Host is not the address the server listens on: 127.0.0.1:`port`, localhost:`port`
/// or [::1]:`port`, the port left out only when it is 80. A request without Host
/// (HTTP/1.0) is served: browsers always send one.
std::optional<HttpResponse> RefuseWebRequest(const HttpRequest& request, int port);

class HttpServer {
 public:
  HttpServer(ApiServer* api, HttpServerOptions options);
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Binds and starts every thread; returns the bound port. Unavailable when the
  /// address or port cannot be bound. REQUIRES: not started.
  Result<int> Start();

  /// Stops accepting requests, queues Destroy for every node's workers (when
  /// `destroy_hosts`), drains the host work (up to drain_timeout) and joins every
  /// thread. Idempotent.
  void Stop(bool destroy_hosts = true);

  /// The bound port; 0 before Start.
  int port() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tpufleet::emulator
