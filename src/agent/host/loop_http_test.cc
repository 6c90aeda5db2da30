// LoopHttpGet against a real HTTP server on loopback, in a real EventLoop: the answers,
// and the bounds PlainHttpClient has (time, size), without blocking the loop.
#include "agent/host/loop_http.h"

#include <gtest/gtest.h>

#include <optional>

#include "agent/host/testing/loopback_http.h"

namespace tpufleet::agent::host {
namespace {

using testing::LoopbackHttpServer;
using testing::LoopbackRequest;

// Runs `request` on a loop of its own until it is answered; the answer.
Result<HttpResponse> Get(const std::string& url,
                         std::chrono::milliseconds timeout = std::chrono::seconds(5),
                         size_t max_bytes = kMaxHttpResponseBytes) {
  RealClock clock;
  EventLoop loop(clock);
  LoopHttpGet get(loop);
  HttpRequest r;
  r.url = url;
  r.timeout = timeout;
  r.max_response_bytes = max_bytes;
  r.headers = {{"Metadata-Flavor", "Google"}};
  std::optional<Result<HttpResponse>> answer;
  get.Start(r, [&](Result<HttpResponse> a) { answer = std::move(a); });
  EXPECT_TRUE(get.busy());
  Status ran = loop.RunUntil([&] { return answer.has_value(); });
  EXPECT_TRUE(ran.ok()) << ran.ToString();
  EXPECT_FALSE(get.busy());
  return answer.value_or(InternalError("no answer"));
}

TEST(LoopHttpGet, GetsTheAnswerWithItsHeaders) {
  std::string seen;
  LoopbackHttpServer server([&](const LoopbackRequest& r) {
    seen = r.head;
    return std::pair{200, std::string("TRUE")};
  }, /*keep_open=*/true);
  Result<HttpResponse> r = Get("http://" + server.address() + "/computeMetadata/v1/x?y=1");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "TRUE");
  EXPECT_EQ(r->headers["metadata-flavor"], "Google");
  EXPECT_EQ(seen.rfind("GET /computeMetadata/v1/x?y=1 HTTP/1.0\r\n", 0), 0u) << seen;
  EXPECT_NE(seen.find("\r\nMetadata-Flavor: Google\r\n"), std::string::npos) << seen;
}

TEST(LoopHttpGet, RefusedSilentAndOversizedAreTheClientsErrors) {
  std::string address;
  {
    LoopbackHttpServer gone([](const LoopbackRequest&) { return std::pair{200, std::string()}; });
    address = gone.address();
  }
  EXPECT_EQ(Get("http://" + address + "/").status().code(), StatusCode::kUnavailable);

  LoopbackHttpServer silent(nullptr, false, /*silent=*/true);
  auto start = std::chrono::steady_clock::now();
  Result<HttpResponse> late = Get("http://" + silent.address() + "/", std::chrono::milliseconds(300));
  EXPECT_EQ(late.status().code(), StatusCode::kTimeout);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));

  LoopbackHttpServer flood(
      [](const LoopbackRequest&) { return std::pair{200, std::string(1 << 20, 'x')}; });
  Result<HttpResponse> big = Get("http://" + flood.address() + "/", std::chrono::seconds(5), 1024);
  EXPECT_EQ(big.status().code(), StatusCode::kInternal);
  EXPECT_NE(big.status().message().find("is larger than"), std::string::npos)
      << big.status().ToString();

  EXPECT_EQ(Get("http://metadata.google.internal/").status().code(), StatusCode::kInvalidArgument);
}

TEST(LoopHttpGet, ACancelledRequestIsNeverAnswered) {
  LoopbackHttpServer silent(nullptr, false, /*silent=*/true);
  RealClock clock;
  EventLoop loop(clock);
  LoopHttpGet get(loop);
  HttpRequest r;
  r.url = "http://" + silent.address() + "/";
  r.timeout = std::chrono::milliseconds(100);
  bool answered = false;
  get.Start(r, [&](Result<HttpResponse>) { answered = true; });
  get.Cancel();
  bool waited = false;
  loop.After(std::chrono::milliseconds(300), [&](Clock::MonoTime) { waited = true; });
  ASSERT_TRUE(loop.RunUntil([&] { return waited; }).ok());
  EXPECT_FALSE(answered);
  EXPECT_FALSE(get.busy());
}

}  // namespace
}  // namespace tpufleet::agent::host
