// HttpHeadServer: the connection side of the agent's two small HTTP servers, on an
// EventLoop: the Prometheus exporter (agent/export/metrics_http.h) and the metadata
// guard's proxy (agent/host/metadata_proxy.h). It accepts, reads one request head per
// connection (up to its blank line; a body is never read), hands the head to the
// owner, writes the one answer the owner gives (now or later) and closes: HTTP/1.0
// style, one request per connection, whatever the client asked for.
//
// Everything it holds is bounded, for ports that processes it does not trust reach:
//   - at most options.max_connections open at once; past that it stops accepting (the
//     kernel's backlog holds the rest) until one ends;
//   - a connection must send its whole head within options.head_timeout of being
//     accepted, and must have got its whole answer within options.exchange_timeout;
//     past either it is closed;
//   - a head is at most options.max_head bytes: a longer one is answered 431 here.
// While an answer is awaited, whatever else the client sends is read and dropped, and
// its close ends the connection (on_close tells the owner, who drops its work).
//
// Thread-safety: none; it lives on its loop's thread, and the callbacks run there.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "util/event_loop.h"
#include "util/status.h"
#include "util/unique_fd.h"

namespace tpufleet {

struct HttpHeadServerOptions {
  size_t max_connections = 16;                   // open at once
  size_t max_head = 8 * 1024;                    // bytes of one request head
  std::chrono::nanoseconds head_timeout{std::chrono::seconds(10)};      // accept to head
  std::chrono::nanoseconds exchange_timeout{std::chrono::seconds(10)};  // accept to answer
};

/// "HTTP/1.0 CODE REASON", Content-Type, Content-Length, `Connection: close`, the
/// `extra_headers` (whole lines, each ending in \r\n), the blank line and `body`.
std::string HttpAnswerText(int code, std::string_view content_type, const std::string& body,
                           std::string_view extra_headers = {});
/// The reason phrase of the codes these servers send ("Error" for others).
std::string_view HttpReason(int code);

class HttpHeadServer {
 public:
  /// A whole head (through its blank line) of connection `id`, from `peer`. The owner
  /// answers with Answer(id, …), at once or later (or never: the timeout closes it).
  using OnHead = std::function<void(uint64_t id, std::string_view head, const sockaddr_in& peer)>;
  /// Connection `id`, whose head the owner got, is closed before its answer went out.
  using OnClose = std::function<void(uint64_t id)>;

  /// REQUIRES: `loop` outlives the server.
  HttpHeadServer(EventLoop& loop, HttpHeadServerOptions options, OnHead on_head,
                 OnClose on_close = nullptr);
  HttpHeadServer(const HttpHeadServer&) = delete;
  HttpHeadServer& operator=(const HttpHeadServer&) = delete;
  /// Closes the listening socket and every connection, and leaves the loop.
  ~HttpHeadServer();

  /// Listens on `address` (port 0: a free port, port() says which). Unavailable when it
  /// cannot be bound ("…: Address already in use"). REQUIRES: called once.
  Status Listen(const sockaddr_in& address);
  /// Sends `answer` (a whole HTTP answer) on connection `id` and closes it once out. A
  /// no-op for a connection that is gone or already answered.
  void Answer(uint64_t id, std::string answer);

  int port() const { return port_; }
  size_t connections() const { return connections_.size(); }

 private:
  struct Connection {
    UniqueFd fd;
    sockaddr_in peer{};
    EventLoop::Id watch = 0;
    EventLoop::Id head_timeout = 0;
    EventLoop::Id timeout = 0;
    std::string head;     // what came in, while the head is incomplete
    std::string answer;   // what is still to be written
    bool got_head = false;   // handed to the owner
    bool answering = false;  // the owner's answer is going out
  };

  void Accept();
  void OnReadable(uint64_t id);
  // Writes what is left of the answer; when all is out, shuts the writing side.
  void OnWritable(uint64_t id);
  void Close(uint64_t id);
  // Accepts while there is room for another connection, stops while there is not.
  void UpdateAccepting();

  EventLoop& loop_;
  HttpHeadServerOptions options_;
  OnHead on_head_;
  OnClose on_close_;
  UniqueFd listen_fd_;
  EventLoop::Id listen_watch_ = 0;
  int port_ = 0;
  uint64_t next_id_ = 1;
  std::map<uint64_t, Connection> connections_;
};

}  // namespace tpufleet
