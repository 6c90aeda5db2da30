// MetadataStub: a real HTTP server on 127.0.0.1 (an ephemeral port) that answers as a
// TPU VM's metadata server does for instance/preempted and instance/maintenance-event,
// long-polls included, for the agent's notice tests: `serve --metadata ADDRESS`.
//
// Each answer carries an ETag (the value's version); `?wait_for_change=true` with the
// current ETag as last_etag is held until Set changes that value or timeout_sec passes.
// A request without `Metadata-Flavor: Google` gets 403. The test can make it go away
// (listener and connections closed: connections refused) and come back on the same port,
// hold every request without an answer (kSilent), or answer 1 MiB (kOversized).
//
// Include in tests only. Thread-safety: its methods may be called from any thread; one
// thread of its own serves, stopped and joined when it is destroyed.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tpufleet::agent::testing {

class MetadataStub {
 public:
  enum class Mode { kAnswer, kSilent, kOversized };

  MetadataStub() {
    values_ = {{"preempted", "FALSE"}, {"maintenance-event", "NONE"}};
    Listen();
    thread_ = std::thread([this] { Serve(); });
  }
  ~MetadataStub() {
    stop_ = true;
    thread_.join();
    std::lock_guard<std::mutex> lock(mu_);
    CloseAll();
  }
  MetadataStub(const MetadataStub&) = delete;
  MetadataStub& operator=(const MetadataStub&) = delete;

  /// "127.0.0.1:PORT"
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  /// Sets instance/KEY; the long-polls waiting on it are answered.
  void Set(const std::string& key, const std::string& value) {
    std::lock_guard<std::mutex> lock(mu_);
    if (values_[key] != value) {
      values_[key] = value;
      ++versions_[key];
    }
  }
  void SetMode(Mode mode) {
    std::lock_guard<std::mutex> lock(mu_);
    mode_ = mode;
  }
  /// Closes the listener and every connection: the server is gone.
  void GoAway() {
    std::lock_guard<std::mutex> lock(mu_);
    CloseAll();
  }
  /// Listens again, on the same port.
  void ComeBack() {
    std::lock_guard<std::mutex> lock(mu_);
    Listen();
  }
  /// The heads of the requests seen, in order.
  std::vector<std::string> Heads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return heads_;
  }

 private:
  struct Conn {
    int fd = -1;
    std::string head;
    bool parked = false;  // a long-poll waiting
    std::string key;
    int version = 0;      // of the value it waits to change
    std::chrono::steady_clock::time_point until{};
  };

  // REQUIRES: mu_ held, or the constructor.
  void Listen() {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port_));
    socklen_t len = sizeof a;
    ::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(listener_, 16);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }

  void CloseAll() {
    if (listener_ >= 0) {
      ::close(listener_);
      listener_ = -1;
    }
    for (Conn& c : conns_) {
      ::close(c.fd);
    }
    conns_.clear();
  }

  void Serve() {
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      std::lock_guard<std::mutex> lock(mu_);
      if (listener_ >= 0) {
        for (int fd; (fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0;) {
          Conn c;
          c.fd = fd;
          conns_.push_back(std::move(c));
        }
      }
      for (Conn& c : conns_) {
        Step(c);
      }
      std::erase_if(conns_, [](const Conn& c) { return c.fd < 0; });
    }
  }

  // Reads the request, answers it when it is due. REQUIRES: mu_ held.
  void Step(Conn& c) {
    char buf[4096];
    for (ssize_t n; (n = ::recv(c.fd, buf, sizeof buf, 0)) > 0;) {
      c.head.append(buf, static_cast<size_t>(n));
    }
    size_t end = c.head.find("\r\n\r\n");
    if (end == std::string::npos || mode_ == Mode::kSilent) {
      return;
    }
    std::string target = c.head.substr(c.head.find(' ') + 1);
    target = target.substr(0, target.find(' '));
    std::string path = target.substr(0, target.find('?'));
    std::string query = target.find('?') == std::string::npos ? "" : target.substr(target.find('?') + 1);
    const std::string prefix = "/computeMetadata/v1/instance/";
    std::string key = path.rfind(prefix, 0) == 0 ? path.substr(prefix.size()) : "";
    if (!c.parked) {
      heads_.push_back(c.head.substr(0, end));
      if (c.head.find("\r\nMetadata-Flavor: Google\r\n") == std::string::npos) {
        Answer(c, 403, "Missing Metadata-Flavor:Google header.", "");
        return;
      }
      if (values_.count(key) == 0) {
        Answer(c, 404, "not found", "");
        return;
      }
      std::string etag = "e" + std::to_string(versions_[key]);
      if (query.find("wait_for_change=true") != std::string::npos &&
          query.find("last_etag=" + etag + "&") != std::string::npos) {
        size_t t = query.find("timeout_sec=");
        int seconds = t == std::string::npos ? 600 : std::stoi(query.substr(t + 12));
        c.parked = true;
        c.key = key;
        c.version = versions_[key];
        c.until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
        return;
      }
    } else if (versions_[c.key] == c.version && std::chrono::steady_clock::now() < c.until) {
      return;
    }
    std::string k = c.parked ? c.key : key;
    if (mode_ == Mode::kOversized) {
      Answer(c, 200, std::string(1 << 20, 'x'), "e" + std::to_string(versions_[k]));
      return;
    }
    Answer(c, 200, values_[k], "e" + std::to_string(versions_[k]));
  }

  void Answer(Conn& c, int status, const std::string& body, const std::string& etag) {
    std::string out = "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\nMetadata-Flavor: Google\r\n" +
                      (etag.empty() ? "" : "ETag: " + etag + "\r\n") + "\r\n" + body;
    for (size_t sent = 0; sent < out.size();) {
      ssize_t n = ::send(c.fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN) {
        break;
      }
      sent += n > 0 ? static_cast<size_t>(n) : 0;
      if (n < 0) {
        pollfd p = {c.fd, POLLOUT, 0};
        if (::poll(&p, 1, 1000) <= 0) {
          break;  // the client stopped reading (it took enough of an oversized answer)
        }
      }
    }
    ::close(c.fd);
    c.fd = -1;
  }

  mutable std::mutex mu_;
  std::map<std::string, std::string> values_;  // guarded by mu_
  std::map<std::string, int> versions_;        // guarded by mu_
  Mode mode_ = Mode::kAnswer;                  // guarded by mu_
  std::vector<Conn> conns_;                    // guarded by mu_
  std::vector<std::string> heads_;             // guarded by mu_
  int listener_ = -1;                          // guarded by mu_
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tpufleet::agent::testing
