#include "emulator/http_server.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tpufleet::emulator {
namespace {

HttpRequest Request(std::map<std::string, std::string> headers) {
  HttpRequest r;
  r.method = "POST";
  r.path = "/v2/projects/p/locations/us-central2-b/nodes";
  r.headers = std::move(headers);
  return r;
}

// A web page must not reach the emulator: by DNS rebinding (its own name, resolving to
// 127.0.0.1, in Host) or by a cross-site request (an Origin header).
TEST(RefuseWebRequestRegression, OnlyTheListeningAddressIsServed) {
  for (const char* host : {"127.0.0.1:8470", "localhost:8470", "LOCALHOST:8470", "[::1]:8470"}) {
    EXPECT_FALSE(RefuseWebRequest(Request({{"host", host}}), 8470)) << host;
  }
  EXPECT_FALSE(RefuseWebRequest(Request({}), 8470)) << "HTTP/1.0 without Host";
  for (const char* host : {"evil.example:8470", "127.0.0.1", "127.0.0.1:8471", "localhost",
                           "127.0.0.1.evil.example:8470", "0.0.0.0:8470", ""}) {
    std::optional<HttpResponse> r = RefuseWebRequest(Request({{"host", host}}), 8470);
    ASSERT_TRUE(r) << host;
    EXPECT_EQ(r->status, 403);
    nlohmann::json j = nlohmann::json::parse(r->body);
    EXPECT_EQ(j["error"]["code"], 403);
    EXPECT_EQ(j["error"]["status"], "PERMISSION_DENIED");
  }
  // Port 80 may be left out, as clients do.
  EXPECT_FALSE(RefuseWebRequest(Request({{"host", "127.0.0.1"}}), 80));
  EXPECT_FALSE(RefuseWebRequest(Request({{"host", "localhost:80"}}), 80));
}

TEST(RefuseWebRequestRegression, AnyOriginIsRefused) {
  for (const char* origin : {"http://evil.example", "null", "http://127.0.0.1:8470"}) {
    std::optional<HttpResponse> r =
        RefuseWebRequest(Request({{"host", "127.0.0.1:8470"}, {"origin", origin}}), 8470);
    ASSERT_TRUE(r) << origin;
    EXPECT_EQ(r->status, 403);
    EXPECT_NE(r->body.find("Origin"), std::string::npos) << r->body;
  }
}

}  // namespace
}  // namespace tpufleet::emulator
