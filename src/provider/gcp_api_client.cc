#include "provider/gcp_api_client.h"

#include <algorithm>
#include <cstdio>

#include "provider/gcp_errors.h"
#include "util/encoding.h"
#include "util/log.h"
#include "util/secret.h"

namespace tpufleet {
namespace {

using Json = nlohmann::json;

bool Retryable(const Status& s) {
  return s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kTimeout;
}

// A refusal (401, 403) as the user must read it: which credentials, that the API
// refused them and with which code, the API's own words, and what to do. Its text stays
// the same while the refusal does, so that serve tells it once. Other errors pass.
Status NameTheCredentials(int http_status, Status s, const TokenSource& tokens) {
  if (s.code() != StatusCode::kPermissionDenied) {
    return s;
  }
  if (http_status == 401) {
    return PermissionDeniedError("the TPU API refused " + tokens.Describe() +
                                 " (HTTP 401 UNAUTHENTICATED: " + s.message() + "): " +
                                 tokens.Renewal());
  }
  return PermissionDeniedError(
      "the TPU API denied " + tokens.Describe() + " (HTTP " + std::to_string(http_status) +
      " PERMISSION_DENIED: " + s.message() +
      "): the credentials are good but may not do this here; grant their account a role "
      "that may (roles/tpu.admin) in the project, or check the project and zone");
}

std::string Seconds(std::chrono::nanoseconds d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3fs", std::chrono::duration<double>(d).count());
  return buf;
}

}  // namespace

std::chrono::milliseconds BackoffCap(const RetryPolicy& policy, int retry) {
  std::chrono::milliseconds cap = policy.initial_backoff;
  for (int i = 1; i < retry && cap < policy.max_backoff; ++i) {
    cap *= 2;
  }
  return std::min(cap, policy.max_backoff);
}

TpuApiClient::TpuApiClient(std::string endpoint, RetryPolicy retry, uint64_t seed,
                           std::chrono::milliseconds request_timeout, TokenSource& tokens,
                           HttpClient& http, Clock& clock)
    : endpoint_(std::move(endpoint)),
      retry_(retry),
      request_timeout_(request_timeout),
      tokens_(tokens),
      http_(http),
      clock_(clock),
      rng_(seed) {}

std::chrono::nanoseconds TpuApiClient::DrawWait(std::chrono::milliseconds cap) {
  std::lock_guard<std::mutex> l(mu_);
  std::uniform_int_distribution<long long> d(
      0, std::chrono::duration_cast<std::chrono::nanoseconds>(cap).count());
  return std::chrono::nanoseconds(d(rng_));
}

std::string TpuApiClient::NewRequestId() {
  uint64_t hi, lo;
  {
    std::lock_guard<std::mutex> l(mu_);
    hi = rng_();
    lo = rng_();
  }
  return FormatUuidV4(hi, lo);
}

Result<Json> TpuApiClient::Attempt(const ApiRequest& request, const std::string& url) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string token, tokens_.AccessToken());
  HttpRequest req;
  req.method = request.method;
  req.url = url;
  req.timeout = request_timeout_;
  req.headers["Authorization"] = "Bearer " + token;
  req.headers["User-Agent"] = std::string(kUserAgent);
  req.headers["x-goog-api-client"] = std::string(kUserAgent);
  if (request.body) {
    req.headers["Content-Type"] = "application/json";
    req.body = request.body->dump();
  }
  TPUFLEET_ASSIGN_OR_RETURN(HttpResponse resp, http_.Send(req));
  if (resp.status < 200 || resp.status >= 300) {
    if (resp.status == 401) {
      tokens_.Refused();  // the next call asks for a fresh token
    }
    return NameTheCredentials(resp.status, ClassifyHttpError(resp.status, resp.body), tokens_);
  }
  if (resp.body.empty()) {
    return Json::object();
  }
  Json j = Json::parse(resp.body, nullptr, false);
  if (j.is_discarded()) {
    // A proxy cut the answer short, most likely: worth another try.
    return UnavailableError("the TPU API answered HTTP " + std::to_string(resp.status) +
                            " with a body that is not JSON");
  }
  return j;
}

Result<Json> TpuApiClient::Call(const ApiRequest& request) {
  std::string url = endpoint_ + request.path;
  for (size_t i = 0; i < request.query.size(); ++i) {
    url += (i == 0 ? "?" : "&") + UrlEscape(request.query[i].first) + "=" +
           UrlEscape(request.query[i].second);
  }
  Clock::MonoTime start = clock_.MonotonicNow();
  for (int attempt = 1;; ++attempt) {
    Result<Json> r = Attempt(request, url);
    if (r.ok() || !Retryable(r.status())) {
      return r;
    }
    std::chrono::nanoseconds wait = DrawWait(BackoffCap(retry_, attempt));
    std::chrono::nanoseconds spent = clock_.MonotonicNow() - start;
    if (attempt >= std::max(retry_.max_attempts, 1) || spent + wait > retry_.max_total) {
      return UnavailableError(r.status().message() + " (" + request.method + " " + url +
                              ": gave up after " + std::to_string(attempt) + " attempts in " +
                              Seconds(spent) + ")");
    }
    Log(LogLevel::kDebug, request.method + " " + url + ": " + r.status().message() + "; retry " +
                              std::to_string(attempt) + " in " + Seconds(wait));
    clock_.SleepFor(wait);
  }
}

}  // namespace tpufleet
