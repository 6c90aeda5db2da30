#include "agent/host/plain_http.h"

#include <gtest/gtest.h>

#include "agent/host/testing/loopback_http.h"

namespace tpufleet::agent::host {
namespace {

using testing::LoopbackHttpServer;
using testing::LoopbackRequest;

HttpRequest GetRequest(const std::string& url,
                       std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  HttpRequest r;
  r.url = url;
  r.timeout = timeout;
  return r;
}

TEST(PlainHttp, GetsAnAnswerAndSendsTheHeaders) {
  std::string seen;
  LoopbackHttpServer server([&](const LoopbackRequest& r) {
    seen = r.head;
    return std::pair{200, std::string("hello from ") + r.path};
  });
  PlainHttpClient client;
  HttpRequest request = GetRequest("http://" + server.address() + "/computeMetadata/v1/x?a=b");
  request.headers = {{"Metadata-Flavor", "Google"}, {"Host", "metadata.google.internal"}};
  Result<HttpResponse> r = client.Send(request);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello from /computeMetadata/v1/x?a=b");
  EXPECT_EQ(r->headers["metadata-flavor"], "Google");
  EXPECT_EQ(seen.rfind("GET /computeMetadata/v1/x?a=b HTTP/1.0\r\n", 0), 0u) << seen;
  EXPECT_NE(seen.find("\r\nHost: metadata.google.internal\r\n"), std::string::npos) << seen;
  EXPECT_NE(seen.find("\r\nMetadata-Flavor: Google\r\n"), std::string::npos);
  EXPECT_EQ(seen.find("Host:"), seen.rfind("Host:")) << "two Host headers: " << seen;

  ASSERT_TRUE(client.Send(GetRequest("http://" + server.address() + "/")).ok());
  EXPECT_NE(seen.find("\r\nHost: " + server.address() + "\r\n"), std::string::npos) << seen;
}

TEST(PlainHttp, AnHttpErrorIsAnAnswer) {
  LoopbackHttpServer server([](const LoopbackRequest&) {
    return std::pair{404, std::string("no")};
  });
  Result<HttpResponse> r = PlainHttpClient().Send(GetRequest("http://" + server.address() + "/"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 404);
}

TEST(PlainHttp, StopsAtContentLengthWhenTheServerKeepsTheConnection) {
  LoopbackHttpServer server(
      [](const LoopbackRequest&) {
        return std::pair{200, std::string("3")};
      },
      /*keep_open=*/true);
  Result<HttpResponse> r = PlainHttpClient().Send(
      GetRequest("http://" + server.address() + "/", std::chrono::seconds(2)));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "3");
}

TEST(PlainHttp, ASilentServerTimesOut) {
  LoopbackHttpServer server(nullptr, false, /*silent=*/true);
  auto start = std::chrono::steady_clock::now();
  Result<HttpResponse> r = PlainHttpClient().Send(
      GetRequest("http://" + server.address() + "/", std::chrono::milliseconds(300)));
  EXPECT_EQ(r.status().code(), StatusCode::kTimeout);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

TEST(PlainHttp, RefusedIsUnavailable) {
  std::string address;
  {
    LoopbackHttpServer gone([](const LoopbackRequest&) { return std::pair{200, std::string()}; });
    address = gone.address();
  }
  EXPECT_EQ(PlainHttpClient().Send(GetRequest("http://" + address + "/")).status().code(),
            StatusCode::kUnavailable);
}

TEST(PlainHttp, ALargeAnswerIsCutOff) {
  LoopbackHttpServer server([](const LoopbackRequest&) {
    return std::pair{200, std::string(1 << 20, 'x')};
  });
  HttpRequest request = GetRequest("http://" + server.address() + "/");
  request.max_response_bytes = 1024;
  EXPECT_EQ(PlainHttpClient().Send(request).status().code(), StatusCode::kInternal);
}

TEST(PlainHttp, RefusesWhatItCannotSpeak) {
  PlainHttpClient client;
  for (const char* url : {"https://169.254.169.254/", "http://metadata.google.internal/",
                          "http://127.0.0.1:99999/", "http://127.0.0.1/a b"}) {
    EXPECT_EQ(client.Send(GetRequest(url)).status().code(), StatusCode::kInvalidArgument) << url;
  }
}

}  // namespace
}  // namespace tpufleet::agent::host
