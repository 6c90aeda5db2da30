#include "server/http_server.h"

#include <httplib.h>

#include <atomic>
#include <optional>
#include <thread>

#include "httpd/bounded_server.h"

namespace tpufleet::server {
namespace {

void Send(const ApiResponse& out, httplib::Response& res) {
  res.status = out.status;
  for (const auto& [k, v] : out.headers) {
    res.set_header(k, v);
  }
  if (!out.stream) {
    res.set_content(out.body, out.content_type);
    return;
  }
  // httplib calls the provider again and again while it returns true and the server
  // runs; the releaser runs once whatever ended it. A client gone (is_writable: it
  // closed the connection) ends it at the next call, however quiet the command.
  std::shared_ptr<ApiStream> stream = out.stream;
  res.set_chunked_content_provider(
      out.content_type,
      [stream](size_t, httplib::DataSink& sink) {
        if (!sink.is_writable()) {
          return false;
        }
        std::optional<std::string> piece = stream->Next();
        if (!piece) {
          sink.done();
          return true;
        }
        return piece->empty() || sink.write(piece->data(), piece->size());
      },
      [stream](bool) { stream->End(); });
}

}  // namespace

class ServeHttpServer::Impl {
 public:
  Impl(const ServeApi* api, std::string address, int port, const TlsIdentity* tls)
      : api_(api), address_(std::move(address)), wanted_port_(port),
        tls_(tls != nullptr ? std::optional<TlsIdentity>(*tls) : std::nullopt) {}

  Result<int> Start() {
    if (started_) {
      return FailedPreconditionError("serve's HTTP server is already started");
    }
    if (tls_) {
      TPUFLEET_TRY(server_.UseTls(tls_->cert_pem, tls_->key_pem)
                       .WithContext("serving TLS with " + tls_->cert_path));
    }
    server_.new_task_queue = [] {
      return new httplib::ThreadPool(static_cast<size_t>(kRequestThreads));
    };
    auto handler = [this](const httplib::Request& req, httplib::Response& res) {
      Serve(req, res);
    };
    server_.Get(".*", handler);
    server_.Post(".*", handler);
    server_.Put(".*", handler);
    server_.Patch(".*", handler);
    server_.Delete(".*", handler);
    server_.Options(".*", handler);
    server_.set_payload_max_length(kMaxRequestBodyBytes);
    server_.set_keep_alive_max_count(kKeepAliveRequests);
    server_.set_keep_alive_timeout(kRequestWait.count());
    server_.set_read_timeout(kIoTimeout.count());
    server_.set_write_timeout(kIoTimeout.count());
    // httplib answers what it could not read (over a limit, malformed) with an empty
    // 400 or 413; give them a body that says why.
    server_.set_error_handler(httplib::Server::HandlerWithResponse(
        [](const httplib::Request&, httplib::Response& res) {
          if ((res.status != 413 && res.status != 400) || !res.body.empty()) {
            return httplib::Server::HandlerResponse::Unhandled;
          }
          Send(ErrorResponse(res.status, "invalid_argument",
                             res.status == 413
                                 ? "a request body over " +
                                       std::to_string(kMaxRequestBodyBytes) +
                                       " bytes (the API takes a command line and its files at most)"
                                 : "the request could not be read: a line over 8 KiB, "
                                   "headers over " +
                                       std::to_string(httpd::kMaxRequestHeadBytes) +
                                       " bytes, or malformed HTTP"),
               res);
          return httplib::Server::HandlerResponse::Handled;
        }));
    server_.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
          Send(ErrorResponse(500, "internal", "internal error"), res);
        });
    TPUFLEET_ASSIGN_OR_RETURN(int port,
                              httpd::StartListening(server_, address_, wanted_port_, listener_));
    port_ = port;
    started_ = true;
    return port;
  }

  void Stop() {
    if (!started_ || stopped_) {
      return;
    }
    stopped_ = true;
    server_.stop();
    if (listener_.joinable()) {
      listener_.join();
    }
  }

  int port() const { return port_.load(); }

 private:
  void Serve(const httplib::Request& req, httplib::Response& res) {
    ApiRequest r;
    r.method = req.method;
    r.path = req.path;
    r.body = req.body;
    httpd::RequestMaps maps = httpd::MapsOf(req);
    r.query = std::move(maps.query);
    r.headers = std::move(maps.headers);
    if (std::optional<std::string> why =
            httpd::WebRequestRefusal(r.headers, address_, port_.load(),
                                     /*check_host=*/!tls_.has_value(), /*own_pages=*/true)) {
      Send(ErrorResponse(403, "permission_denied",
                         *why + " serve's API answers programs, never web pages."),
           res);
      return;
    }
    // httplib checks Content-Length against the limit; a chunked body is checked here.
    if (req.body.size() > kMaxRequestBodyBytes) {
      Send(ErrorResponse(413, "invalid_argument", "a request body over " +
                                                      std::to_string(kMaxRequestBodyBytes) +
                                                      " bytes (the API takes a command line and its files at most)"),
           res);
      return;
    }
    Send(api_->Handle(r), res);
  }

  const ServeApi* const api_;
  const std::string address_;
  const int wanted_port_;
  const std::optional<TlsIdentity> tls_;
  httpd::BoundedServer server_{kMaxRequestBodyBytes + httpd::kMaxRequestHeadBytes};
  std::thread listener_;
  std::atomic<int> port_{0};
  bool started_ = false;
  bool stopped_ = false;
};

ServeHttpServer::ServeHttpServer(const ServeApi* api, std::string address, int port,
                                 const TlsIdentity* tls)
    : impl_(std::make_unique<Impl>(api, std::move(address), port, tls)) {}

ServeHttpServer::~ServeHttpServer() {
  impl_->Stop();
}

Result<int> ServeHttpServer::Start() {
  return impl_->Start();
}

void ServeHttpServer::Stop() {
  impl_->Stop();
}

int ServeHttpServer::port() const {
  return impl_->port();
}

}  // namespace tpufleet::server
