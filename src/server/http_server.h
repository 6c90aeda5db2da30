// ServeHttpServer: serves a ServeApi (http_api.h) over HTTP/1.1 with cpp-httplib, on
// loopback unless told otherwise (`tpufleet serve --listen ADDR:PORT`), over TLS with a
// TlsIdentity (tls_identity.h), or plain HTTP without one (loopback only: the command
// refuses another address, cli/serve_command.h).
//
// Before a request reaches the ServeApi (which checks the token):
//   - other sites' pages are kept out (httpd::WebRequestRefusal): a request with an
//     Origin header other than this server's own (its dashboard's, dashboard.h), or
//     (plain HTTP) whose Host is not the address served, gets 403, so neither a
//     cross-site request nor DNS rebinding from a page open in a browser here reaches the
//     API (over TLS a rebound name meets a certificate the browser refuses; clients name
//     the server as they like);
//   - sizes are bounded: a body over kMaxRequestBodyBytes (a command line and its
//     files) gets 413
//     unread; head and body together at most httpd::kMaxRequestHeadBytes +
//     kMaxRequestBodyBytes per request (httpd::BoundedServer), else 400 and the
//     connection closed;
//   - connections are bounded in time and count: kRequestThreads answer at once (a
//     connection holds its thread from its first request to its close), a connection
//     serves kKeepAliveRequests requests, one idle before its request for
//     kRequestWait or slow within one for kIoTimeout is closed (a command's answer,
//     streamed, lasts as long as the command; a client that reads nothing of it for
//     kIoTimeout is gone, and its command interrupted).
//
// Ownership: the ServeApi must outlive the server. Thread-safety: Start and Stop are for
// one controlling thread; port() may be read from any thread after Start.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "api/remote_command.h"
#include "server/http_api.h"
#include "server/tls_identity.h"
#include "util/status.h"

namespace tpufleet::server {

/// The default of --listen: loopback only; anyone on this machine who holds the token.
inline constexpr const char* kDefaultListenAddress = "127.0.0.1";
/// The default port (0 picks a free one, which the log line names).
inline constexpr int kDefaultListenPort = 8471;
/// Largest request body read: POST /v1/command's, one command line and the files it
/// reads (the other routes take none).
inline constexpr size_t kMaxRequestBodyBytes = api::kMaxCommandRequestBytes;
/// Connections served at once: a command holds its thread while it runs (up to
/// kMaxRunningCommands of them, and kMaxFollowedLogs followed logs), and 24 more answer
/// the rest (CLIs' status, dashboards, a Prometheus) however many commands run. Fifty
/// open dashboards keep about that many connections busy or briefly idle
/// (bench/RESULTS.md, "The dashboard").
inline constexpr int kRequestThreads = kMaxRunningCommands + kMaxFollowedLogs + 24;
/// Requests on one connection: one, and the connection is closed with its answer, so
/// that a connection holds a thread only while its request is answered. (httplib gives
/// each open connection a thread: the keep-alive connections of 50 open dashboards, a
/// request every few seconds on each, held every thread while plain reads waited
/// seconds for one; bench/RESULTS.md, "The dashboard".) A client pays a TLS handshake
/// per request instead, which a CLI, one request per run, paid anyway.
inline constexpr int kKeepAliveRequests = 1;
/// A connection that sends no request this long after it is opened (over TLS: after its
/// handshake) is closed: it only holds a thread. A client sends its request at once, but
/// on a loaded machine "at once" took over 2 s (bench/RESULTS.md, "The dashboard": every
/// failed request of 50 open dashboards was a connection closed so).
inline constexpr std::chrono::seconds kRequestWait{5};
/// A connection silent this long within a request (or an answer unread) is closed.
inline constexpr std::chrono::seconds kIoTimeout{5};

class ServeHttpServer {
 public:
  /// Serves `api` on `address`:`port` once started: over TLS as `tls` when given (copied),
  /// plain HTTP when null.
  ServeHttpServer(const ServeApi* api, std::string address, int port,
                  const TlsIdentity* tls = nullptr);
  ~ServeHttpServer();  // Stop()
  ServeHttpServer(const ServeHttpServer&) = delete;
  ServeHttpServer& operator=(const ServeHttpServer&) = delete;

  /// Binds and starts serving on a thread of its own; returns the bound port.
  /// Unavailable when the address and port cannot be bound; InvalidArgument when the
  /// TLS identity does not load. REQUIRES: not started.
  Result<int> Start();
  /// Stops accepting, finishes the requests under way, joins. Idempotent.
  void Stop();
  /// The bound port; 0 before Start.
  int port() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tpufleet::server
