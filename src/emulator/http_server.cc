#include "emulator/http_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "emulator/wire.h"
#include "util/log.h"
#include "util/strings.h"

namespace tpufleet::emulator {
namespace {

// How long a host-work thread waits for work before it looks at the stop flag again.
constexpr std::chrono::milliseconds kHostWorkPoll{100};
// How often Stop looks whether the host work has drained.
constexpr std::chrono::milliseconds kDrainPoll{20};
// Longest Start waits for httplib's listener thread to be up (it takes microseconds).
constexpr std::chrono::milliseconds kListenWait{5000};

// Slices in which an idle keep-alive connection waits, so Stop is not held up by it.
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

// httplib's socket stream, with a budget of bytes per request (see the header): once it
// is spent, reads fail and httplib answers 400 and closes the connection.
class BoundedStream final : public httplib::Stream {
 public:
  BoundedStream(int fd, int read_timeout_ms, int write_timeout_ms)
      : fd_(fd), read_timeout_ms_(read_timeout_ms), write_timeout_ms_(write_timeout_ms) {}

  void StartRequest() { budget_ = kMaxRequestBodyBytes + kMaxRequestHeadBytes; }
  bool Exhausted() const { return budget_ == 0; }
  bool Buffered() const { return pos_ < end_; }

  bool is_readable() const override {
    return Buffered() || PollFd(fd_, POLLIN, read_timeout_ms_) > 0;
  }
  bool is_writable() const override { return PollFd(fd_, POLLOUT, write_timeout_ms_) > 0; }

  ssize_t read(char* ptr, size_t size) override {
    if (budget_ == 0) {
      return -1;
    }
    if (!Buffered()) {
      if (PollFd(fd_, POLLIN, read_timeout_ms_) <= 0) {
        return -1;
      }
      ssize_t n;
      do {
        n = ::recv(fd_, buf_, sizeof buf_, 0);
      } while (n < 0 && errno == EINTR);
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
  const int read_timeout_ms_;
  const int write_timeout_ms_;
  size_t budget_ = 0;
  char buf_[4096];
  size_t pos_ = 0;
  size_t end_ = 0;
};

// httplib's Server, serving each connection through a BoundedStream; the rest (keep-
// alive, timeouts, stop) as httplib does it.
class BoundedServer final : public httplib::Server {
 private:
  bool process_and_close_socket(socket_t sock) override {
    BoundedStream strm(sock, Millis(read_timeout_sec_, read_timeout_usec_),
                       Millis(write_timeout_sec_, write_timeout_usec_));
    bool ret = false;
    for (size_t left = keep_alive_max_count_; left > 0 && WaitForRequest(strm, sock); --left) {
      strm.StartRequest();
      bool closed = false;
      ret = process_request(strm, /*close_connection=*/left == 1, closed, nullptr);
      // A request over budget was answered 400; what follows it is not a request.
      if (!ret || closed || strm.Exhausted()) {
        break;
      }
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ret;
  }

  // True when a request starts within the keep-alive timeout and the server runs.
  bool WaitForRequest(const BoundedStream& strm, int sock) const {
    if (strm.Buffered()) {
      return true;
    }
    for (time_t waited_ms = 0; svr_sock_ != INVALID_SOCKET;
         waited_ms += kKeepAlivePollMs) {
      int r = PollFd(sock, POLLIN, kKeepAlivePollMs);
      if (r != 0) {
        return r > 0;
      }
      if (waited_ms >= keep_alive_timeout_sec_ * 1000) {
        return false;
      }
    }
    return false;
  }
};

}  // namespace

std::optional<HttpResponse> RefuseWebRequest(const HttpRequest& request, int port) {
  auto refuse = [](const std::string& why) {
    return ErrorResponse({RpcCode::kPermissionDenied,
                          why + " The emulator answers only programs on this machine, never "
                                "web pages.",
                          Json::array()});
  };
  if (request.headers.count("origin") != 0) {
    return refuse("Requests with an Origin header are refused.");
  }
  auto host = request.headers.find("host");
  if (host == request.headers.end()) {
    return std::nullopt;
  }
  std::string want_port = ":" + std::to_string(port);
  std::string h = AsciiLower(host->second);
  for (const char* name : {"127.0.0.1", "localhost", "[::1]"}) {
    if (h == name + want_port || (port == 80 && h == name)) {
      return std::nullopt;
    }
  }
  return refuse("Host \"" + host->second.substr(0, 100) + "\" is not this emulator's address (" +
                "127.0.0.1" + want_port + ").");
}

HttpResponse PayloadTooLarge() {
  HttpResponse r = ErrorResponse({RpcCode::kInvalidArgument,
                                  "Request payload size exceeds the limit: " +
                                      std::to_string(kMaxRequestBodyBytes) + " bytes.",
                                  Json::array()});
  if (Json j = Json::parse(r.body, nullptr, false); j.is_object()) {
    j["error"]["code"] = 413;
    r = JsonResponse(j, 413);
  }
  return r;
}

class HttpServer::Impl {
 public:
  Impl(ApiServer* api, HttpServerOptions options) : api_(api), options_(std::move(options)) {}

  Result<int> Start() {
    if (started_) {
      return FailedPreconditionError("the emulator's HTTP server is already started");
    }
    int threads = std::max(1, options_.request_threads);
    server_.new_task_queue = [threads] {
      return new httplib::ThreadPool(static_cast<size_t>(threads));
    };
    auto handler = [this](const httplib::Request& req, httplib::Response& res) { Serve(req, res); };
    server_.Get(".*", handler);
    server_.Post(".*", handler);
    server_.Put(".*", handler);
    server_.Patch(".*", handler);
    server_.Delete(".*", handler);
    // httplib answers an oversized body (by Content-Length, before reading it) with an
    // empty 413, and a request it could not read (over a limit, or malformed) with an
    // empty 400; the error handler gives them Google's envelope. Responses of the API
    // already carry a body and pass unchanged.
    server_.set_payload_max_length(kMaxRequestBodyBytes);
    server_.set_error_handler(httplib::Server::HandlerWithResponse(
        [](const httplib::Request&, httplib::Response& res) {
          if ((res.status != 413 && res.status != 400) || !res.body.empty()) {
            return httplib::Server::HandlerResponse::Unhandled;
          }
          HttpResponse out =
              res.status == 413
                  ? PayloadTooLarge()
                  : ErrorResponse({RpcCode::kInvalidArgument,
                                   "The request could not be read: a request or header line "
                                   "over 8 KiB, headers over " +
                                       std::to_string(kMaxRequestHeadBytes) +
                                       " bytes, a body over " +
                                       std::to_string(kMaxRequestBodyBytes) +
                                       " bytes, or malformed HTTP.",
                                   Json::array()});
          res.set_content(out.body, out.content_type);
          return httplib::Server::HandlerResponse::Handled;
        }));
    server_.set_exception_handler([](const httplib::Request&, httplib::Response& res,
                                     std::exception_ptr) {
      res.status = 500;
      res.set_content(
          R"({"error":{"code":500,"message":"Internal error encountered.","status":"INTERNAL"}})",
          "application/json");
    });
    int port = options_.port;
    if (port == 0) {
      port = server_.bind_to_any_port(options_.address);
      if (port < 0) {
        return UnavailableError("cannot bind " + options_.address + " to any port");
      }
    } else if (!server_.bind_to_port(options_.address, port)) {
      return UnavailableError("cannot bind " + options_.address + ":" + std::to_string(port) +
                              " (in use, or not allowed)");
    }
    port_ = port;
    started_ = true;
    listener_ = std::thread([this] { server_.listen_after_bind(); });
    // Stop before the listener runs would be lost (httplib's stop() only acts on a
    // running server), so wait until it is.
    auto deadline = std::chrono::steady_clock::now() + kListenWait;
    while (!server_.is_running() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ticker_ = std::thread([this] { TickLoop(); });
    for (int i = 0; i < std::max(1, options_.host_threads); ++i) {
      host_threads_.emplace_back([this] {
        while (!stop_hosts_.load()) {
          api_->RunHostWorkOnce(kHostWorkPoll);
        }
      });
    }
    return port;
  }

  void Stop(bool destroy_hosts) {
    if (!started_ || stopped_) {
      return;
    }
    stopped_ = true;
    server_.stop();
    if (listener_.joinable()) {
      listener_.join();
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (ticker_.joinable()) {
      ticker_.join();
    }
    if (destroy_hosts) {
      api_->DestroyAllHosts();
    }
    // Real time: shutdown waits for real worker hosts to be torn down.
    auto deadline = std::chrono::steady_clock::now() + options_.drain_timeout;
    while (api_->host_work_pending() > 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(kDrainPoll);
    }
    if (api_->host_work_pending() > 0) {
      Log(LogLevel::kWarn, "emulator: stopping with " + std::to_string(api_->host_work_pending()) +
                               " worker-host calls still queued");
    }
    stop_hosts_ = true;
    api_->StopHostWork();
    for (std::thread& t : host_threads_) {
      t.join();
    }
    host_threads_.clear();
  }

  int port() const { return port_.load(); }

 private:
  void Serve(const httplib::Request& req, httplib::Response& res) {
    HttpRequest r;
    r.method = req.method;
    r.path = req.path;
    for (const auto& [k, v] : req.params) {
      r.query[k] = v;
    }
    for (const auto& [k, v] : req.headers) {
      r.headers[AsciiLower(k)] = v;
    }
    r.body = req.body;
    // httplib checks Content-Length against the limit; a chunked body is checked here.
    std::optional<HttpResponse> refused = RefuseWebRequest(r, port_.load());
    if (!refused && r.body.size() > kMaxRequestBodyBytes) {
      refused = PayloadTooLarge();
    }
    HttpResponse out = refused ? *std::move(refused) : api_->Handle(r);
    res.status = out.status;
    for (const auto& [k, v] : out.headers) {
      res.set_header(k, v);
    }
    res.set_content(out.body, out.content_type);
    if (GetLogLevel() >= LogLevel::kDebug) {
      Log(LogLevel::kDebug,
          "emulator: " + req.method + " " + req.path + " -> " + std::to_string(out.status));
    }
  }

  void TickLoop() {
    std::unique_lock<std::mutex> l(mu_);
    while (!stopping_) {
      l.unlock();
      api_->Tick();
      l.lock();
      // Real time: this thread is the emulator's heartbeat, not a decision; the
      // ApiServer reads the injected Clock to decide what is due.
      cv_.wait_for(l, options_.tick_interval, [this] { return stopping_; });
    }
  }

  ApiServer* const api_;
  const HttpServerOptions options_;
  BoundedServer server_;
  std::thread listener_;
  std::thread ticker_;
  std::vector<std::thread> host_threads_;
  std::atomic<bool> stop_hosts_{false};
  std::atomic<int> port_{0};
  bool started_ = false;
  bool stopped_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
};

HttpServer::HttpServer(ApiServer* api, HttpServerOptions options)
    : impl_(std::make_unique<Impl>(api, std::move(options))) {}

HttpServer::~HttpServer() {
  impl_->Stop(/*destroy_hosts=*/true);
}

Result<int> HttpServer::Start() {
  return impl_->Start();
}

void HttpServer::Stop(bool destroy_hosts) {
  impl_->Stop(destroy_hosts);
}

int HttpServer::port() const {
  return impl_->port();
}

}  // namespace tpufleet::emulator
