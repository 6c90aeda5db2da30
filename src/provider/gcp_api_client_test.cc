#include "provider/gcp_api_client.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "provider/testing/fake_token_source.h"
#include "provider/testing/scripted_http_client.h"
#include "util/testing/fake_clock.h"
#include "util/testing/status_printer.h"

namespace tpufleet {
namespace {

using Json = nlohmann::json;
using std::chrono::milliseconds;

class ApiClientTest : public ::testing::Test {
 protected:
  std::unique_ptr<TpuApiClient> Client(RetryPolicy policy = {}, uint64_t seed = 7) {
    return std::make_unique<TpuApiClient>("http://tpu.test/", policy, seed, milliseconds(5000),
                                          tokens_, http_, clock_);
  }
  // Answers every request with `answer`, noting when each came.
  void AlwaysAnswer(HttpResponse answer) {
    http_.Handle([this, answer](const HttpRequest&) -> Result<HttpResponse> {
      times_.push_back(clock_.MonotonicNow());
      return answer;
    });
  }

  FakeClock clock_;
  FakeTokenSource tokens_;
  ScriptedHttpClient http_;
  std::vector<Clock::MonoTime> times_;
};

TEST_F(ApiClientTest, SendsTokenAgentQueryAndJsonBody) {
  http_.Push(ScriptedHttpClient::Json(200, {{"ok", true}}));
  ApiRequest call;
  call.method = "POST";
  call.path = "v2/projects/p/locations/z/nodes";
  call.query = {{"nodeId", "n 1"}, {"b", "x&y"}};
  call.body = Json{{"acceleratorType", "v4-8"}};
  EXPECT_EQ(Client()->Call(call).value(), (Json{{"ok", true}}));
  HttpRequest req = http_.requests().at(0);
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.url, "http://tpu.test/v2/projects/p/locations/z/nodes?nodeId=n%201&b=x%26y");
  EXPECT_EQ(req.headers["Authorization"], "Bearer ya29.test");
  EXPECT_EQ(req.headers["User-Agent"], "tpufleet/0.1");
  EXPECT_EQ(req.headers["x-goog-api-client"], "tpufleet/0.1");
  EXPECT_EQ(req.headers["Content-Type"], "application/json");
  EXPECT_EQ(Json::parse(req.body), (Json{{"acceleratorType", "v4-8"}}));
  EXPECT_EQ(req.timeout, milliseconds(5000));
}

TEST_F(ApiClientTest, EmptyBodyIsAnEmptyObjectAndGetsSendNoBody) {
  http_.Push(HttpResponse{200, {}, ""});
  EXPECT_EQ(Client()->Call({.method = "GET", .path = "v2/x"}).value(), Json::object());
  EXPECT_EQ(http_.requests().at(0).body, "");
  EXPECT_EQ(http_.requests().at(0).headers.count("Content-Type"), 0u);
}

TEST_F(ApiClientTest, BackoffCapsDoubleUpToTheMaximum) {
  RetryPolicy p;
  std::vector<long long> caps;
  for (int retry = 1; retry <= 8; ++retry) {
    caps.push_back(BackoffCap(p, retry).count());
  }
  EXPECT_EQ(caps, (std::vector<long long>{1000, 2000, 4000, 8000, 16000, 32000, 32000, 32000}));
}

TEST_F(ApiClientTest, TransientErrorsAreRetriedWithJitteredWaitsWithinTheirCaps) {
  http_.Push(
      ScriptedHttpClient::Error(503, "UNAVAILABLE", "The service is currently unavailable."));
  http_.Push(ScriptedHttpClient::Error(
      429, "RESOURCE_EXHAUSTED", "Quota exceeded for quota metric 'Read requests' per minute",
      ScriptedHttpClient::ErrorInfo("RATE_LIMIT_EXCEEDED")));
  http_.Push(ScriptedHttpClient::Error(500, "INTERNAL", "Internal error encountered."));
  http_.Push(ScriptedHttpClient::Error(504, "DEADLINE_EXCEEDED", "timed out"));
  http_.Push(ScriptedHttpClient::Json(502, Json::object()));
  http_.Push(UnavailableError("connection refused"));
  http_.Push(TimeoutError("timed out"));
  Clock::MonoTime start = clock_.MonotonicNow();
  http_.Push(ScriptedHttpClient::Json(200, {{"done", true}}));
  EXPECT_EQ(Client()->Call({.path = "v2/x"}).value(), (Json{{"done", true}}));
  EXPECT_EQ(http_.request_count(), 8u);
  // Seven waits, each at most its cap: 1+2+4+8+16+32+32 s.
  EXPECT_LE(clock_.MonotonicNow() - start, milliseconds(95000));
  EXPECT_GT(clock_.MonotonicNow() - start, milliseconds(0));
}

TEST_F(ApiClientTest, EveryWaitIsWithinItsCapAndTheSeedFixesThem) {
  RetryPolicy p{.max_attempts = 6, .max_total = std::chrono::hours(1)};
  AlwaysAnswer(ScriptedHttpClient::Error(503, "UNAVAILABLE", "down"));
  Result<Json> r = Client(p, 42)->Call({.path = "v2/x"});
  ASSERT_EQ(times_.size(), 6u);
  std::vector<Clock::MonoTime::duration> waits;
  for (size_t i = 1; i < times_.size(); ++i) {
    waits.push_back(times_[i] - times_[i - 1]);
    EXPECT_LE(times_[i] - times_[i - 1], BackoffCap(p, static_cast<int>(i))) << i;
  }
  // Full jitter: the waits are not simply the caps.
  EXPECT_NE(waits[4], Clock::MonoTime::duration(BackoffCap(p, 5)));

  times_.clear();
  Result<Json> again = Client(p, 42)->Call({.path = "v2/x"});
  for (size_t i = 1; i < times_.size(); ++i) {
    EXPECT_EQ(times_[i] - times_[i - 1], waits[i - 1]);
  }
}

TEST_F(ApiClientTest, GivesUpAfterMaxAttemptsWithTheLastMessage) {
  AlwaysAnswer(ScriptedHttpClient::Error(503, "UNAVAILABLE", "The service is down."));
  Result<Json> r = Client({.max_attempts = 3})->Call({.path = "v2/x"});
  ASSERT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(http_.request_count(), 3u);
  EXPECT_NE(r.status().message().find("The service is down."), std::string::npos);
  EXPECT_NE(r.status().message().find("gave up after 3 attempts"), std::string::npos)
      << r.status().message();
}

TEST_F(ApiClientTest, GivesUpBeforeTheTotalTimeRunsOut) {
  RetryPolicy p{.max_attempts = 100,
                .initial_backoff = milliseconds(1000),
                .max_backoff = milliseconds(1000),
                .max_total = milliseconds(3000)};
  AlwaysAnswer(ScriptedHttpClient::Error(503, "UNAVAILABLE", "down"));
  Clock::MonoTime start = clock_.MonotonicNow();
  EXPECT_EQ(Client(p)->Call({.path = "v2/x"}).status().code(), StatusCode::kUnavailable);
  EXPECT_LE(clock_.MonotonicNow() - start, milliseconds(3000));
  EXPECT_GE(http_.request_count(), 3u);
}

TEST_F(ApiClientTest, FinalAnswersAreNotRetried) {
  for (const AnswerAndCode& c : std::vector<AnswerAndCode>{
           {ScriptedHttpClient::Error(404, "NOT_FOUND", "gone"), StatusCode::kNotFound},
           {ScriptedHttpClient::Error(409, "ALREADY_EXISTS", "taken"), StatusCode::kAlreadyExists},
           {ScriptedHttpClient::Error(400, "INVALID_ARGUMENT", "bad"),
            StatusCode::kInvalidArgument},
           {ScriptedHttpClient::QuotaExceeded("Quota limit 'X' has been exceeded."),
            StatusCode::kFailedPrecondition},
       }) {
    ScriptedHttpClient http;
    http.Push(c.answer);
    TpuApiClient client("http://tpu.test/", {}, 1, milliseconds(5000), tokens_, http, clock_);
    EXPECT_EQ(client.Call({.path = "v2/x"}).status().code(), c.code) << c.answer.body;
    EXPECT_EQ(http.request_count(), 1u);
  }
}

TEST_F(ApiClientTest, PermissionDeniedSaysWhichCredentials) {
  http_.Push(
      ScriptedHttpClient::Error(403, "PERMISSION_DENIED", "Permission 'tpu.nodes.list' denied"));
  Status s = Client()->Call({.path = "v2/x"}).status();
  EXPECT_EQ(s, PermissionDeniedError(
                   "the TPU API denied test credentials (HTTP 403 PERMISSION_DENIED: "
                   "Permission 'tpu.nodes.list' denied): the credentials are good but may not "
                   "do this here; grant their account a role that may (roles/tpu.admin) in the "
                   "project, or check the project and zone"));
  EXPECT_EQ(http_.request_count(), 1u) << "a refusal is not retried";
  EXPECT_EQ(tokens_.refused(), 0) << "the token is good; its account may not";
}

// Issue 14: a credential revoked mid-run. The 401 names the credentials, the code, and
// how to renew them, in words that stay the same while it lasts (serve tells it once).
TEST_F(ApiClientTest, UnauthenticatedSaysWhichCredentialsAndHowToRenewThem) {
  const std::string google =
      "Request had invalid authentication credentials. Expected OAuth 2 access token, login "
      "cookie or other valid authentication credential.";
  http_.Push(ScriptedHttpClient::Error(401, "UNAUTHENTICATED", google));
  http_.Push(ScriptedHttpClient::Error(401, "UNAUTHENTICATED", google));
  Status first = Client()->Call({.path = "v2/x"}).status();
  EXPECT_EQ(first, PermissionDeniedError("the TPU API refused test credentials (HTTP 401 "
                                         "UNAUTHENTICATED: " + google + "): give credentials "
                                         "the API accepts (see docs/security.md)"));
  EXPECT_EQ(Client()->Call({.path = "v2/x"}).status(), first);
  EXPECT_EQ(http_.request_count(), 2u) << "a refusal is not retried";
  EXPECT_EQ(tokens_.refused(), 2) << "each 401 drops the cached token";
}

TEST_F(ApiClientTest, TokenTroubleIsRetriedOnlyWhenTransient) {
  tokens_.Fail(UnavailableError("token endpoint down"));
  http_.Push(ScriptedHttpClient::Json(200, Json::object()));
  Result<Json> r = Client({.max_attempts = 2})->Call({.path = "v2/x"});
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(tokens_.calls(), 2);
  EXPECT_EQ(http_.request_count(), 0u);
  tokens_.Fail(PermissionDeniedError("refused"));
  EXPECT_EQ(Client()->Call({.path = "v2/x"}).status(), PermissionDeniedError("refused"));
  EXPECT_EQ(tokens_.calls(), 3);
}

TEST_F(ApiClientTest, ABodyThatIsNotJsonIsRetried) {
  http_.Push(HttpResponse{200, {}, "<html>"});
  http_.Push(ScriptedHttpClient::Json(200, {{"a", 1}}));
  EXPECT_EQ(Client()->Call({.path = "v2/x"}).value(), (Json{{"a", 1}}));
}

TEST_F(ApiClientTest, RequestIdsAreVersion4UuidsFixedByTheSeed) {
  std::unique_ptr<TpuApiClient> a = Client({}, 3);
  std::unique_ptr<TpuApiClient> b = Client({}, 3);
  std::set<std::string> seen;
  std::regex uuid("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  for (int i = 0; i < 20; ++i) {
    std::string id = a->NewRequestId();
    EXPECT_TRUE(std::regex_match(id, uuid)) << id;
    EXPECT_EQ(id, b->NewRequestId());
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 20u);
}

}  // namespace
}  // namespace tpufleet
