// ScriptedHttpClient: an HttpClient for unit tests that answers from a script and
// records every request, so a test can check what was sent (method, URL, headers, body)
// without a socket.
//
// Answers come first from a queue (Push, in order), then from the handler (Handle),
// which can route on the URL; with neither, a request is Unavailable ("connection
// refused"), like a port where nothing listens.
//
// Thread-safety: Send may be called from several threads at once (a mutex guards the
// script and the record); the handler then runs under it, one request at a time.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/http_client.h"

namespace tpufleet {

/// An answer of the API and the code its caller must get (the rows of error tables).
struct AnswerAndCode {
  HttpResponse answer;
  StatusCode code;
};

class ScriptedHttpClient final : public HttpClient {
 public:
  using Handler = std::function<Result<HttpResponse>(const HttpRequest&)>;

  Result<HttpResponse> Send(const HttpRequest& request) override {
    std::lock_guard<std::mutex> l(mu_);
    requests_.push_back(request);
    if (!queue_.empty()) {
      Result<HttpResponse> r = std::move(queue_.front());
      queue_.pop_front();
      return r;
    }
    if (handler_) {
      return handler_(request);
    }
    return UnavailableError("connection refused: " + request.url);
  }

  /// Answers the next request with `answer` (after those pushed before).
  void Push(Result<HttpResponse> answer) {
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back(std::move(answer));
  }
  /// Answers every request the queue does not.
  void Handle(Handler handler) {
    std::lock_guard<std::mutex> l(mu_);
    handler_ = std::move(handler);
  }

  std::vector<HttpRequest> requests() const {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }
  size_t request_count() const {
    std::lock_guard<std::mutex> l(mu_);
    return requests_.size();
  }

  /// A response with `json` as its body.
  static HttpResponse Json(int status, const nlohmann::json& json,
                           std::map<std::string, std::string> headers = {}) {
    return HttpResponse{status, std::move(headers), json.dump()};
  }
  /// Google's error envelope: {"error": {code, message, status, details}}.
  static HttpResponse Error(int http, const std::string& status, const std::string& message,
                            nlohmann::json details = nlohmann::json::array()) {
    return Json(http, {{"error",
                        {{"code", http},
                         {"message", message},
                         {"status", status},
                         {"details", std::move(details)}}}});
  }
  /// The details of an error envelope that give its reason (a google.rpc.ErrorInfo);
  /// with its domain when `domain` is not empty.
  static nlohmann::json ErrorInfo(const std::string& reason, const std::string& domain = "") {
    nlohmann::json info = {{"@type", "type.googleapis.com/google.rpc.ErrorInfo"},
                           {"reason", reason}};
    if (!domain.empty()) {
      info["domain"] = domain;
    }
    return nlohmann::json::array({info});
  }
  /// A quota's 429 (RESOURCE_EXHAUSTED for the reason RESOURCE_QUOTA_EXCEEDED).
  static HttpResponse QuotaExceeded(const std::string& message) {
    return Error(429, "RESOURCE_EXHAUSTED", message, ErrorInfo("RESOURCE_QUOTA_EXCEEDED"));
  }

 private:
  mutable std::mutex mu_;
  std::deque<Result<HttpResponse>> queue_;  // guarded by mu_
  Handler handler_;                         // guarded by mu_
  std::vector<HttpRequest> requests_;       // guarded by mu_
};

}  // namespace tpufleet
