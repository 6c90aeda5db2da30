// TpuApiClient: one call to the Cloud TPU API with what every call needs — the bearer
// token, JSON in and out, retries of transient failures, and errors classified by what
// control does next (gcp_errors.h). GcpTpuProvider (gcp_tpu.h) builds its calls on it.
// Internal to src/provider.
//
// Retried: HTTP 429 that is a rate limit rather than a quota, 500/502/503/504, ABORTED,
// and transport failures (Unavailable, Timeout), including a token endpoint that is
// down. Each wait is drawn uniformly from [0, cap] ("full jitter", so many clients
// that failed together do not retry together), the cap doubling from
// RetryPolicy::initial_backoff up to max_backoff. After max_attempts, or when the next
// wait would pass max_total, the call is Unavailable with the last error's message.
// Waits go through the injected Clock, so tests with FakeClock never sleep.
//
// A retried mutating call must be safe to repeat; that is the caller's part (request
// ids, and treating AlreadyExists or NotFound as the earlier attempt's success).
//
// Thread-safety: Call may be used from several threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "provider/gcp_credentials.h"
#include "util/clock.h"
#include "util/http_client.h"
#include "util/status.h"

namespace tpufleet {

/// Sent as User-Agent and x-goog-api-client, so Google's logs say who called.
inline constexpr std::string_view kUserAgent = "tpufleet/0.1";

/// How hard one call tries. Google's advice for its APIs: start at about 1 s, double,
/// stop around a minute or two.
struct RetryPolicy {
  int max_attempts = 8;                             // per call, the first included
  std::chrono::milliseconds initial_backoff{1000};  // cap of the first wait
  std::chrono::milliseconds max_backoff{32000};     // no cap grows past this
  std::chrono::milliseconds max_total{120000};      // no retry starts later than this
};

/// The cap of the wait before retry number `retry` (1 = the first retry):
/// min(max_backoff, initial_backoff * 2^(retry-1)).
std::chrono::milliseconds BackoffCap(const RetryPolicy& policy, int retry);

/// One API call. `path` follows the endpoint: "v2/projects/p/locations/z/nodes".
struct ApiRequest {
  std::string method = "GET";
  std::string path;
  std::vector<std::pair<std::string, std::string>> query = {};  // escaped by Call
  std::optional<nlohmann::json> body = std::nullopt;            // sent as application/json
};

class TpuApiClient {
 public:
  /// `endpoint` ends in "/" (ResolveTpuEndpoint); `seed` seeds the jitter.
  TpuApiClient(std::string endpoint, RetryPolicy retry, uint64_t seed,
               std::chrono::milliseconds request_timeout, TokenSource& tokens, HttpClient& http,
               Clock& clock);
  TpuApiClient(const TpuApiClient&) = delete;
  TpuApiClient& operator=(const TpuApiClient&) = delete;

  /// The answer's JSON ({} for an empty body), or the classified error.
  Result<nlohmann::json> Call(const ApiRequest& request);

  /// A fresh random id for requestId (a version-4 UUID, from the seeded generator).
  std::string NewRequestId();

  const TokenSource& tokens() const { return tokens_; }

 private:
  /// One attempt: Unavailable or Timeout when it is worth another.
  Result<nlohmann::json> Attempt(const ApiRequest& request, const std::string& url);
  std::chrono::nanoseconds DrawWait(std::chrono::milliseconds cap);

  const std::string endpoint_;
  const RetryPolicy retry_;
  const std::chrono::milliseconds request_timeout_;
  TokenSource& tokens_;
  HttpClient& http_;
  Clock& clock_;
  std::mutex mu_;
  std::mt19937_64 rng_;  // guarded by mu_
};

}  // namespace tpufleet
