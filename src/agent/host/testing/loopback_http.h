// LoopbackHttpServer: a real HTTP server on 127.0.0.1 (an ephemeral port) for tests of
// the agent's HTTP client and of the doctor's metadata check: one thread accepts each
// connection in turn, reads the request head, and answers what the handler says, with
// a Content-Length. `keep_open` leaves the connection open after the answer (a server
// that ignores HTTP/1.0's close); `silent` never answers at all. Stopped and joined
// when destroyed.
//
// Include in tests only. Thread-safety: construct, use from the test thread, destroy.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <utility>

namespace tpufleet::agent::host::testing {

struct LoopbackRequest {
  std::string head;  // the request line and headers, as sent
  std::string path;  // from the request line
};

class LoopbackHttpServer {
 public:
  using Handler = std::function<std::pair<int, std::string>(const LoopbackRequest&)>;

  explicit LoopbackHttpServer(Handler handler, bool keep_open = false, bool silent = false)
      : handler_(std::move(handler)), keep_open_(keep_open), silent_(silent) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd_, 16);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~LoopbackHttpServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  LoopbackHttpServer(const LoopbackHttpServer&) = delete;
  LoopbackHttpServer& operator=(const LoopbackHttpServer&) = delete;

  /// "127.0.0.1:PORT"
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  void Serve() {
    std::vector<int> open;
    while (!stop_) {
      pollfd p = {fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) {
        continue;
      }
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) {
        continue;
      }
      std::string head;
      char buf[4096];
      while (head.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) {
          break;
        }
        head.append(buf, static_cast<size_t>(n));
      }
      if (silent_) {
        open.push_back(c);
        continue;
      }
      LoopbackRequest r{head, head.substr(head.find(' ') + 1,
                                          head.find(' ', head.find(' ') + 1) - head.find(' ') - 1)};
      auto [status, body] = handler_(r);
      std::string out = "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: " +
                        std::to_string(body.size()) + "\r\nMetadata-Flavor: Google\r\n\r\n" + body;
      (void)!::send(c, out.data(), out.size(), MSG_NOSIGNAL);
      if (keep_open_) {
        open.push_back(c);
      } else {
        ::close(c);
      }
    }
    for (int c : open) {
      ::close(c);
    }
  }

  Handler handler_;
  bool keep_open_;
  bool silent_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tpufleet::agent::host::testing
