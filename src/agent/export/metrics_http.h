// MetricsHttpServer: the smallest HTTP server a Prometheus can scrape, on the agent's
// event loop (util/event_loop.h): GET /metrics answers what `render` returns (the text
// of prometheus_text.h) as text/plain; version=0.0.4. It is how `tpufleet-agent serve
// --prometheus [ADDR:]PORT` exposes the worker's latest sample; off unless given.
//
// HTTP/1.0, one request per connection (util/http_head_server.h): the server reads the
// request head (up to the blank line; a body is never read), writes one answer with
// Content-Length and `Connection: close`, and closes. Answers: 200 for GET /metrics (a
// query string is ignored), 404 for any other path, 405 (Allow: GET) for another method
// on /metrics, 400 for what is not an HTTP request line, 431 for a head over
// kMaxRequestHead. Everything it holds is bounded, for a port that anyone on the network may reach:
//   - at most kMaxConnections open at once; past that it stops accepting (the kernel's
//     backlog holds the rest) until one ends;
//   - a connection that has not got its whole answer within kClientTimeout of being
//     accepted is closed (a slow or silent client holds a slot that long at most);
//   - a request head is at most kMaxRequestHead bytes.
// It reads nothing of the agent but what `render` gives, and takes no commands.
//
// Addresses are IPv4 (no DNS: the agent is static and carries no NSS): "PORT" listens on
// 0.0.0.0, "ADDR:PORT" on ADDR; port 0 takes a free port (port() says which).
//
// Thread-safety: none; it lives on its loop's thread, and `render` runs there (so it must
// be quick: a snapshot, not a sample).
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

#include "util/event_loop.h"
#include "util/http_head_server.h"
#include "util/status.h"

namespace tpufleet::agent::exporter {

/// Prometheus' scrape timeout defaults to 10 s; a client still unanswered after that has
/// given up.
inline constexpr std::chrono::seconds kClientTimeout{10};
/// A scrape is one connection every 15 s per Prometheus; a few spare for curl and people.
inline constexpr size_t kMaxConnections = 16;
/// A GET's head is a few hundred bytes; 8 KiB is the common servers' line limit.
inline constexpr size_t kMaxRequestHead = 8 * 1024;

/// "PORT" or "ADDR:PORT" (IPv4 address, port 0–65535) as a socket address;
/// InvalidArgument, naming what was wrong, otherwise.
Result<sockaddr_in> ParseListenAddress(const std::string& address);

class MetricsHttpServer {
 public:
  /// REQUIRES: `loop` outlives the server.
  MetricsHttpServer(EventLoop& loop, std::function<std::string()> render);
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;
  /// Closes the listening socket and every connection, and leaves the loop.
  ~MetricsHttpServer() = default;

  /// Listens on `address` (see above). InvalidArgument for a bad address; Unavailable
  /// when it cannot be bound ("0.0.0.0:9100: Address already in use").
  /// REQUIRES: called once.
  Status Listen(const std::string& address);
  /// The port listened on (the one the kernel chose for port 0); 0 before Listen.
  int port() const { return server_.port(); }
  /// Connections open now.
  size_t connections() const { return server_.connections(); }

 private:
  std::function<std::string()> render_;
  HttpHeadServer server_;
};

}  // namespace tpufleet::agent::exporter
