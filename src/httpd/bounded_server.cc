#include "httpd/bounded_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <vector>

#include "util/strings.h"

namespace tpufleet::httpd {
namespace {

// Longest StartListening waits for the listener thread to be up (it takes microseconds).
constexpr std::chrono::milliseconds kListenWait{5000};

// Slices in which an idle keep-alive connection waits, so stop() is not held up by it.
constexpr int kKeepAlivePollMs = 50;

int PollFd(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  int r;
  do {
    r = ::poll(&p, 1, timeout_ms);
  } while (r < 0 && errno == EINTR);
  return r;
}

int Millis(time_t sec, time_t usec) {
  return static_cast<int>(sec * 1000 + usec / 1000);
}

// httplib's socket stream, with a budget of bytes per request (see the header).
// `ssl`: the connection's TLS session, or null for plain HTTP.
class BoundedStream final : public httplib::Stream {
 public:
  BoundedStream(int fd, SSL* ssl, int read_timeout_ms, int write_timeout_ms)
      : fd_(fd), ssl_(ssl), read_timeout_ms_(read_timeout_ms),
        write_timeout_ms_(write_timeout_ms) {}

  void StartRequest(size_t budget) { budget_ = budget; }
  bool Exhausted() const { return budget_ == 0; }
  bool Buffered() const { return pos_ < end_ || (ssl_ != nullptr && SSL_pending(ssl_) > 0); }

  bool is_readable() const override {
    return Buffered() || PollFd(fd_, POLLIN, read_timeout_ms_) > 0;
  }
  // A peer that closed its side is gone (see the header), though its kernel still takes
  // bytes: httplib asks before each piece of a streamed body, so a client's Ctrl-C
  // ends the stream at the next piece, however quiet the stream.
  bool is_writable() const override {
    pollfd p{fd_, POLLRDHUP, 0};
    if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
      return false;
    }
    return PollFd(fd_, POLLOUT, write_timeout_ms_) > 0;
  }

  ssize_t read(char* ptr, size_t size) override {
    if (budget_ == 0) {
      return -1;
    }
    if (pos_ == end_) {
      if (!Buffered() && PollFd(fd_, POLLIN, read_timeout_ms_) <= 0) {
        return -1;
      }
      ssize_t n = Receive();
      if (n <= 0) {
        return n;
      }
      pos_ = 0;
      end_ = static_cast<size_t>(n);
    }
    size_t n = std::min({size, end_ - pos_, budget_});
    std::memcpy(ptr, buf_ + pos_, n);
    pos_ += n;
    budget_ -= n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) {
      return -1;
    }
    if (ssl_ != nullptr) {
      // The socket's SO_SNDTIMEO bounds a write the peer does not read.
      int n = SSL_write(ssl_, ptr, static_cast<int>(std::min<size_t>(size, INT_MAX)));
      return n > 0 ? n : -1;
    }
    ssize_t n;
    do {
      n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    Address(::getpeername, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    Address(::getsockname, ip, port);
  }
  socket_t socket() const override { return fd_; }

 private:
  // Bytes of the next read into buf_: over TLS a record's worth (SO_RCVTIMEO bounds a
  // record that does not complete); 0 at the end, -1 on an error.
  ssize_t Receive() {
    if (ssl_ != nullptr) {
      int n = SSL_read(ssl_, buf_, sizeof buf_);
      return n > 0 ? n : (SSL_get_error(ssl_, n) == SSL_ERROR_ZERO_RETURN ? 0 : -1);
    }
    ssize_t n;
    do {
      n = ::recv(fd_, buf_, sizeof buf_, 0);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  void Address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    char text[INET6_ADDRSTRLEN] = "";
    port = 0;
    if (get(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0 && addr.ss_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
      ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
      port = ntohs(in->sin_port);
    }
    ip = text;
  }

  const int fd_;
  SSL* const ssl_;
  const int read_timeout_ms_;
  const int write_timeout_ms_;
  size_t budget_ = 0;
  char buf_[4096];
  size_t pos_ = 0;
  size_t end_ = 0;
};

// True when a request starts within the keep-alive timeout and the server runs.
bool WaitForRequest(const BoundedStream& strm, int sock, time_t keep_alive_sec,
                    const std::atomic<socket_t>& listening) {
  if (strm.Buffered()) {
    return true;
  }
  for (time_t waited_ms = 0; listening != INVALID_SOCKET; waited_ms += kKeepAlivePollMs) {
    int r = PollFd(sock, POLLIN, kKeepAlivePollMs);
    if (r != 0) {
      return r > 0;
    }
    if (waited_ms >= keep_alive_sec * 1000) {
      return false;
    }
  }
  return false;
}

void SetTimeout(int sock, int option, time_t sec, time_t usec) {
  timeval tv{sec, static_cast<suseconds_t>(usec)};
  ::setsockopt(sock, SOL_SOCKET, option, &tv, sizeof tv);
}

struct SslFree {
  void operator()(SSL* ssl) const { SSL_free(ssl); }
};

}  // namespace

BoundedServer::~BoundedServer() {
  SSL_CTX_free(tls_);
}

Status BoundedServer::UseTls(const std::string& cert_pem, const std::string& key_pem) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) {
    return InternalError("cannot make a TLS context");
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  BIO* certs = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  BIO* key = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  X509* leaf = PEM_read_bio_X509(certs, nullptr, nullptr, nullptr);
  EVP_PKEY* pkey = PEM_read_bio_PrivateKey(key, nullptr, nullptr, nullptr);
  bool ok = leaf != nullptr && pkey != nullptr && SSL_CTX_use_certificate(ctx, leaf) == 1 &&
            SSL_CTX_use_PrivateKey(ctx, pkey) == 1 && SSL_CTX_check_private_key(ctx) == 1;
  // The chain after the leaf, if any; the context owns what it is given.
  while (X509* chain = ok ? PEM_read_bio_X509(certs, nullptr, nullptr, nullptr) : nullptr) {
    ok = SSL_CTX_add_extra_chain_cert(ctx, chain) == 1;
  }
  ERR_clear_error();  // the end of the PEM is an "error" too
  X509_free(leaf);
  EVP_PKEY_free(pkey);
  BIO_free(certs);
  BIO_free(key);
  if (!ok) {
    SSL_CTX_free(ctx);
    return InvalidArgumentError("the TLS certificate and key do not load, or do not match");
  }
  SSL_CTX_free(tls_);
  tls_ = ctx;
  return Status::Ok();
}

bool BoundedServer::process_and_close_socket(socket_t sock) {
  std::unique_ptr<SSL, SslFree> ssl;
  if (tls_ != nullptr) {
    // The handshake and every TLS record after it are bounded by the socket's timeouts.
    SetTimeout(sock, SO_RCVTIMEO, read_timeout_sec_, read_timeout_usec_);
    SetTimeout(sock, SO_SNDTIMEO, write_timeout_sec_, write_timeout_usec_);
    ssl.reset(SSL_new(tls_));
    if (!ssl || SSL_set_fd(ssl.get(), sock) != 1 || SSL_accept(ssl.get()) != 1) {
      ERR_clear_error();
      ::close(sock);
      return false;
    }
  }
  BoundedStream strm(sock, ssl.get(), Millis(read_timeout_sec_, read_timeout_usec_),
                     Millis(write_timeout_sec_, write_timeout_usec_));
  bool ret = false;
  for (size_t left = keep_alive_max_count_;
       left > 0 && WaitForRequest(strm, sock, keep_alive_timeout_sec_, svr_sock_); --left) {
    strm.StartRequest(request_budget_);
    bool closed = false;
    ret = process_request(strm, /*close_connection=*/left == 1, closed, nullptr);
    // A request over budget was answered 400; what follows it is not a request.
    if (!ret || closed || strm.Exhausted()) {
      break;
    }
  }
  if (ssl) {
    SSL_shutdown(ssl.get());  // our close_notify; the peer's is not waited for
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ret;
}

Result<int> StartListening(httplib::Server& server, const std::string& address, int port,
                           std::thread& listener) {
  // httplib's default sets SO_REUSEPORT too, with which a second server binds the same
  // port and the kernel splits the connections between them: only SO_REUSEADDR here
  // (a restarted server may bind while the old connections linger in TIME_WAIT).
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  int bound = port == 0 ? server.bind_to_any_port(address)
                        : (server.bind_to_port(address, port) ? port : -1);
  if (bound < 0) {
    return UnavailableError("cannot listen on " + address + ":" +
                            (port == 0 ? std::string("(any port)") : std::to_string(port)) +
                            " (in use, or not an address of this machine)");
  }
  listener = std::thread([&server] { server.listen_after_bind(); });
  auto deadline = std::chrono::steady_clock::now() + kListenWait;
  while (!server.is_running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return bound;
}

RequestMaps MapsOf(const httplib::Request& request) {
  RequestMaps m;
  for (const auto& [k, v] : request.params) {
    m.query[k] = v;
  }
  for (const auto& [k, v] : request.headers) {
    m.headers[AsciiLower(k)] = v;
  }
  return m;
}

std::optional<std::string> WebRequestRefusal(const std::map<std::string, std::string>& headers,
                                             const std::string& listen_address, int port,
                                             bool check_host, bool own_pages) {
  auto host = headers.find("host");
  if (auto origin = headers.find("origin"); origin != headers.end()) {
    std::string own = std::string(check_host ? "http://" : "https://") +
                      (host != headers.end() ? AsciiLower(host->second) : std::string());
    if (!own_pages || host == headers.end() || AsciiLower(origin->second) != own) {
      return own_pages ? "Requests with an Origin header other than this server's are refused."
                       : "Requests with an Origin header are refused.";
    }
  }
  if (!check_host || host == headers.end()) {
    return std::nullopt;
  }
  std::string want_port = ":" + std::to_string(port);
  std::string h = AsciiLower(host->second);
  std::vector<std::string> names = {"127.0.0.1", "localhost", "[::1]"};
  // A wildcard is no address a client names; an IPv6 address is bracketed in Host.
  std::string listen = AsciiLower(listen_address);
  if (listen.find(':') != std::string::npos) {
    listen = "[" + listen + "]";
  }
  if (!listen.empty() && listen != "0.0.0.0" && listen != "[::]") {
    names.push_back(listen);
  }
  for (const std::string& name : names) {
    if (h == name + want_port || (port == 80 && h == name)) {
      return std::nullopt;
    }
  }
  return "Host \"" + host->second.substr(0, 100) + "\" is not this server's address (" +
         names.back() + want_port + ").";
}

}  // namespace tpufleet::httpd
