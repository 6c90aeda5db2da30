// LoopHttpGet: one HTTP/1.0 request without a body, as PlainHttpClient sends it
// (plain_http.h: IPv4 only, the answer read to its Content-Length or the server's
// close, bounded by request.max_response_bytes), but on an EventLoop instead of a
// blocked thread: the agent's notice watcher keeps long-polls to the metadata server
// open for minutes in serve's own loop, beside its socket and its jobs.
//
// request.timeout bounds the whole exchange, connect to last byte; `done` then gets the
// answer or the error PlainHttpClient would give (Unavailable: refused or unreachable;
// Timeout; Internal: malformed or too large). It runs on the loop's thread, never from
// within Start, and not at all after Cancel or destruction.
//
// Thread-safety: none; the loop's thread only.
#pragma once

#include <functional>
#include <string>

#include "util/event_loop.h"
#include "util/http_client.h"
#include "util/status.h"
#include "util/unique_fd.h"

namespace tpufleet::agent::host {

class LoopHttpGet {
 public:
  using Done = std::function<void(Result<HttpResponse> answer)>;

  explicit LoopHttpGet(EventLoop& loop) : loop_(loop) {}
  LoopHttpGet(const LoopHttpGet&) = delete;
  LoopHttpGet& operator=(const LoopHttpGet&) = delete;
  ~LoopHttpGet() { Cancel(); }

  /// Starts `request`. REQUIRES: !busy().
  void Start(HttpRequest request, Done done);
  /// Drops the request in flight (its connection closed, `done` never called).
  void Cancel();
  bool busy() const { return static_cast<bool>(done_); }

 private:
  void OnReady(short revents);
  void Finish(Result<HttpResponse> answer);

  EventLoop& loop_;
  HttpRequest request_;
  Done done_;
  UniqueFd fd_;
  bool connected_ = false;
  std::string out_;  // the request's bytes not yet sent
  std::string raw_;  // the answer so far
  EventLoop::Id watch_ = 0;
  EventLoop::Id deadline_ = 0;
};

}  // namespace tpufleet::agent::host
