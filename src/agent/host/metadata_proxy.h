// MetadataProxy: where the metadata guard (metadata_guard.h) sends the metadata traffic
// of the accounts without sudo. It listens on 127.0.0.1 (a free port, given to the
// guard's redirect rule) on the agent's event loop, and for each connection reads one
// request head and either
//   - refuses it (metadata_filter.h: a token, an identity, a method but GET, a body, an
//     unreadable target): 403 (405, 400) with a one-line text/plain body that names
//     tpufleet and the account (found from the client's socket in /proc/net/tcp{,6});
//   - or forwards it to the metadata server (LoopHttpGet: HTTP/1.0, one connection per
//     request) with the client's headers as they came (Metadata-Flavor, Host,
//     X-Forwarded-For and all: never one of its own), but for the hop-by-hop ones
//     (Connection, Keep-Alive, Proxy-Connection, TE, Upgrade), and relays the answer
//     (status, headers, body) with `Connection: close`. An answer whose body holds an
//     access token is refused instead (the filter's second line).
// `wait_for_change` long polls are forwarded like any request, with a deadline long
// enough for the longest `timeout_sec` a metadata server honours (an hour).
//
// Bounded: kMaxProxyConnections at once (past that the kernel's backlog waits), a head
// of kMaxProxyHead bytes within kProxyHeadTimeout, an answer of kMaxProxiedAnswerBytes;
// a client that goes away cancels its request to the server. It logs nothing: no token
// passes through it, and the paths of the others are theirs.
//
// Thread-safety: none; the loop's thread only.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>

#include "agent/host/host_paths.h"
#include "agent/host/loop_http.h"
#include "util/event_loop.h"
#include "util/http_head_server.h"
#include "util/status.h"

namespace tpufleet::agent::host {

/// Each guarded process holds at most a connection or two (a long poll, a read); a node
/// has a handful of collaborators.
inline constexpr size_t kMaxProxyConnections = 64;
/// A metadata client sends its head at once; a few hundred bytes.
inline constexpr std::chrono::seconds kProxyHeadTimeout{10};
inline constexpr size_t kMaxProxyHead = 16 * 1024;
/// A plain read answers in milliseconds; a server that takes this long is stuck.
inline constexpr std::chrono::seconds kProxyRequestTimeout{30};
/// wait_for_change: the metadata server honours timeout_sec up to an hour; a minute more.
inline constexpr std::chrono::seconds kProxyLongPollTimeout{3660};
/// The largest answer relayed: a recursive listing of all the metadata is well under.
inline constexpr size_t kMaxProxiedAnswerBytes = 4u << 20;

class MetadataProxy {
 public:
  /// `metadata_url`: http://IPV4[:PORT] of the metadata server; `host`: where
  /// /proc/net/tcp and /etc/passwd are. REQUIRES: `loop` outlives the proxy.
  MetadataProxy(EventLoop& loop, std::string metadata_url, HostPaths host);
  MetadataProxy(const MetadataProxy&) = delete;
  MetadataProxy& operator=(const MetadataProxy&) = delete;

  /// Listens on 127.0.0.1:`port` (0: a free port). Unavailable when it cannot.
  Status Listen(int port = 0);
  int port() const { return server_.port(); }

 private:
  void OnHead(uint64_t id, std::string_view head, const sockaddr_in& peer);
  // The name of the account whose socket is `peer`'s end ("this account" when unknown).
  std::string AccountOf(const sockaddr_in& peer) const;

  EventLoop& loop_;
  std::string metadata_url_;
  HostPaths host_;
  HttpHeadServer server_;
  std::map<uint64_t, std::unique_ptr<LoopHttpGet>> upstream_;  // by connection
};

}  // namespace tpufleet::agent::host
