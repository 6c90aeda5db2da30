#include "emulator/http_server.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "emulator/wire.h"
#include "httpd/bounded_server.h"
#include "util/encoding.h"
#include "util/log.h"
#include "util/strings.h"

namespace tpufleet::emulator {
namespace {

// How long a host-work thread waits for work before it looks at the stop flag again.
constexpr std::chrono::milliseconds kHostWorkPoll{100};
// How often Stop looks whether the host work has drained.
constexpr std::chrono::milliseconds kDrainPoll{20};

}  // namespace

std::optional<HttpResponse> RefuseWebRequest(const HttpRequest& request, int port) {
  std::optional<std::string> why = httpd::WebRequestRefusal(request.headers, "127.0.0.1", port);
  if (!why) {
    return std::nullopt;
  }
  return ErrorResponse({RpcCode::kPermissionDenied,
                        *why + " The emulator answers only programs on this machine, never "
                               "web pages.",
                        Json::array()});
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
    // A method that carries a body, sent with neither Content-Length nor chunked
    // encoding: httplib would read its body until the client closes (an answer that
    // depends on the client's timing). Google's front end answers 411 at once.
    server_.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
      bool carries_body = req.method == "POST" || req.method == "PUT" || req.method == "PATCH";
      if (!carries_body || req.has_header("Content-Length") ||
          req.has_header("Transfer-Encoding")) {
        return httplib::Server::HandlerResponse::Unhandled;
      }
      res.status = 411;
      res.set_content("<!DOCTYPE html>\n<title>Error 411 (Length Required)</title>\n<p>" +
                          req.method + " requests require a Content-length header.\n",
                      "text/html; charset=UTF-8");
      return httplib::Server::HandlerResponse::Handled;
    });
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
                                       std::to_string(httpd::kMaxRequestHeadBytes) +
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
    TPUFLEET_ASSIGN_OR_RETURN(
        int port, httpd::StartListening(server_, options_.address, options_.port, listener_));
    port_ = port;
    started_ = true;
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
    httpd::RequestMaps maps = httpd::MapsOf(req);
    // From the raw target, not httplib's params: those lose the start of a value with
    // '=' in it (gax sends $alt=json;enum-encoding=int unescaped). Every value of a
    // repeated name is kept, in order: Google's front end reads a repeated field from
    // all of them.
    if (size_t q = req.target.find('?'); q != std::string::npos) {
      for (auto& field : ParseQueryFields(std::string_view(req.target).substr(q + 1))) {
        r.query.insert(std::move(field));
      }
    }
    r.headers = std::move(maps.headers);
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
  httpd::BoundedServer server_{kMaxRequestBodyBytes + httpd::kMaxRequestHeadBytes};
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
