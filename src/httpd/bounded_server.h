// BoundedServer: cpp-httplib's Server with every request's size bounded, and
// WebRequestRefusal, the check that keeps web pages out. Shared by the HTTP servers
// tpufleet runs on this machine: the emulator's Cloud TPU API (emulator/http_server.h)
// and `tpufleet serve`'s API (server/http_server.h).
//
// Sizes: httplib refuses a request line or header line over 8 KiB (its compiled-in
// limits) and a body whose Content-Length is over set_payload_max_length, but counts no
// headers (httplib 0.11: 300 MiB of headers grew the emulator by 465 MB). So each
// connection here reads at most `request_budget` bytes per request, head and body
// together; once spent, reads fail, httplib answers 400, and the connection is closed.
// An idle keep-alive connection waits in short slices, so stop() is not held up by it.
//
// A client that closed its side of the connection (shutdown or close: a FIN came) is
// taken as gone: nothing more is written to it. HTTP clients do not half-close; a
// streamed answer (serve's POST /v1/command) learns so that its client left.
//
// TLS (UseTls): each connection's handshake first, bounded by the read and write
// timeouts, then the same bounded reading over TLS. httplib's own SSLServer is not used:
// it reads without the budget above.
//
// Web pages: a page open in a browser on this machine must not reach a local server,
// neither by a cross-site request nor by DNS rebinding (a name of the page's site that
// resolves to 127.0.0.1). WebRequestRefusal says why a request may come from one.
//
// Thread-safety: BoundedServer is httplib::Server's (listen on one thread, stop from
// another); WebRequestRefusal is a pure function.
#pragma once

#include <httplib.h>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "util/status.h"

namespace tpufleet::httpd {

/// Room for the request line and headers: Google's front end takes about 15 KiB of
/// headers; four times that is ample for any client.
inline constexpr size_t kMaxRequestHeadBytes = 64 << 10;

class BoundedServer final : public httplib::Server {
 public:
  /// `request_budget`: the bytes one request may take, head and body
  /// (kMaxRequestHeadBytes + the largest body served).
  explicit BoundedServer(size_t request_budget) : request_budget_(request_budget) {}
  ~BoundedServer() override;
  BoundedServer(const BoundedServer&) = delete;
  BoundedServer& operator=(const BoundedServer&) = delete;

  /// Serves TLS (1.2 or later) with the certificate (then its chain) of `cert_pem` and
  /// the private key of `key_pem`. InvalidArgument when they do not load or do not
  /// match. REQUIRES: before listening.
  Status UseTls(const std::string& cert_pem, const std::string& key_pem);

 private:
  bool process_and_close_socket(socket_t sock) override;

  const size_t request_budget_;
  SSL_CTX* tls_ = nullptr;  // owned; null: plain HTTP
};

/// Binds `server` to `address`:`port` (0: any free port), starts `server.listen_after_bind`
/// on `listener` and waits until it listens (httplib's stop() is lost on a server not yet
/// running). A port another server holds is refused (no SO_REUSEPORT, which httplib
/// sets by default). Returns the bound port; Unavailable when it cannot be bound.
/// REQUIRES: `listener` holds no thread.
Result<int> StartListening(httplib::Server& server, const std::string& address, int port,
                           std::thread& listener);

/// A request's query parameters (decoded; a repeated name keeps its last value) and
/// headers (names in lower case), as the servers' own request types hold them.
struct RequestMaps {
  std::map<std::string, std::string> query;
  std::map<std::string, std::string> headers;
};
RequestMaps MapsOf(const httplib::Request& request);

/// Why a request may come from a web page, or nullopt to serve it. Refused: any request
/// with an Origin header (no API client sends one; browsers do on cross-site and on
/// POST requests), and one whose Host is not an address the server listens on:
/// 127.0.0.1:`port`, localhost:`port`, [::1]:`port` or `listen_address`:`port` (the
/// port left out only when it is 80). A request without Host (HTTP/1.0) is served:
/// browsers always send one. `headers` has lower-case names.
/// `check_host` false leaves the Host check out, for a server over TLS: a page's
/// rebound name meets a certificate the browser refuses before any request is sent.
/// `own_pages` serves a server's own pages (serve's dashboard): an Origin that is this
/// very server, its scheme (https when `check_host` is false) and the request's Host,
/// is no other site's page, and passes on to the Host check.
std::optional<std::string> WebRequestRefusal(const std::map<std::string, std::string>& headers,
                                             const std::string& listen_address, int port,
                                             bool check_host = true, bool own_pages = false);

}  // namespace tpufleet::httpd
