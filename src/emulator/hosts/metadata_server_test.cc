#include "emulator/hosts/metadata_server.h"

#include <gtest/gtest.h>

namespace tpufleet::emulator::hosts {
namespace {

constexpr const char* kDoc = R"({
  "computeMetadata": {"v1": {
    "instance": {
      "attributes": {"agent-worker-number": "2", "ssh-keys": "a:b"},
      "preempted": "FALSE",
      "service-accounts": {"default": {"email": "e@x", "scopes": "s\n"}}
    },
    "project": {"project-id": "p"}
  }},
  "worker": {"ignored": "here"}
})";

HttpRequest Get(const std::string& target, bool flavor = true) {
  HttpRequest r;
  r.method = "GET";
  r.target = target;
  if (flavor) {
    r.headers["metadata-flavor"] = "Google";
  }
  return r;
}

class MetadataServerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_.SetDocument(kDoc).ok()); }
  MetadataServer server_{"seed"};
  Clock::MonoTime now_{};
};

TEST_F(MetadataServerTest, LeafNeedsTheFlavorHeader) {
  HttpResponse r =
      server_.Render(Get("/computeMetadata/v1/instance/attributes/agent-worker-number"), now_);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "2");
  EXPECT_EQ(r.etag.size(), 16u);
  r = server_.Render(Get("/computeMetadata/v1/instance/preempted", false), now_);
  EXPECT_EQ(r.status, 403);
  HttpRequest forwarded = Get("/computeMetadata/v1/instance/preempted");
  forwarded.headers["x-forwarded-for"] = "1.2.3.4";
  EXPECT_EQ(server_.Render(forwarded, now_).status, 403);
  HttpRequest legacy = Get("/computeMetadata/v1/instance/preempted", false);
  legacy.headers["x-google-metadata-request"] = "True";
  EXPECT_EQ(server_.Render(legacy, now_).status, 200);
  EXPECT_EQ(server_.Render(Get("/", false), now_).body, "computeMetadata/\n");
}

// A web page in a browser on the worker reaches 169.254.169.254 through DNS rebinding
// with its own site's name in Host; same-origin requests may carry any header.
TEST_F(MetadataServerTest, WebPagesAreRefusedRegression) {
  const std::string leaf = "/computeMetadata/v1/instance/attributes/ssh-keys";
  for (const char* host : {"metadata.google.internal", "metadata.google.internal:80", "metadata",
                           "169.254.169.254", "169.254.169.254:80", "METADATA.google.internal"}) {
    HttpRequest r = Get(leaf);
    r.headers["host"] = host;
    EXPECT_EQ(server_.Render(r, now_).status, 200) << host;
  }
  for (const char* host : {"evil.example", "evil.example:80", "169.254.169.254:8080",
                           "metadata.google.internal.evil.example", ""}) {
    HttpRequest r = Get(leaf);
    r.headers["host"] = host;
    EXPECT_EQ(server_.Render(r, now_).status, 403) << host;
    r.target = "/";
    EXPECT_EQ(server_.Render(r, now_).status, 403) << host;
  }
  HttpRequest origin = Get(leaf);
  origin.headers["host"] = "metadata.google.internal";
  origin.headers["origin"] = "http://metadata.google.internal";
  HttpResponse refused = server_.Render(origin, now_);
  EXPECT_EQ(refused.status, 403);
  EXPECT_NE(refused.body.find("web pages"), std::string::npos) << refused.body;
}

TEST_F(MetadataServerTest, DirectoriesListRedirectAndRecurse) {
  HttpResponse r = server_.Render(Get("/computeMetadata/v1/instance/"), now_);
  EXPECT_EQ(r.body, "attributes/\npreempted\nservice-accounts/\n");
  r = server_.Render(Get("/computeMetadata/v1/instance"), now_);
  EXPECT_EQ(r.status, 301);
  EXPECT_EQ(r.location, "/computeMetadata/v1/instance/");
  r = server_.Render(Get("/computeMetadata/v1/instance/attributes/?recursive=true"), now_);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.body, R"({"agent-worker-number":"2","ssh-keys":"a:b"})");
  r = server_.Render(Get("/computeMetadata/v1/instance/service-accounts/default/"), now_);
  EXPECT_EQ(r.body, "email\nscopes\ntoken\n");
  r = server_.Render(Get("/computeMetadata/v1/instance/attributes/ssh-keys?alt=json"), now_);
  EXPECT_EQ(r.body, "\"a:b\"");
  EXPECT_EQ(server_.Render(Get("/computeMetadata/v1/worker"), now_).status, 404);
  EXPECT_EQ(server_.Render(Get("/computeMetadata/v1/../worker"), now_).status, 404);
  EXPECT_EQ(server_.Render(Get("/computeMetadata/v1/instance/nope"), now_).status, 404);
  EXPECT_EQ(server_.Render(Get("/worker"), now_).status, 404);
}

TEST_F(MetadataServerTest, TokenIsMadeUpAndRenewed) {
  HttpRequest t = Get("/computeMetadata/v1/instance/service-accounts/default/token");
  HttpResponse r = server_.Render(t, now_);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body,
            R"({"access_token":"ya29.c.emulated-seed-1","expires_in":3600,"token_type":"Bearer"})");
  r = server_.Render(t, now_ + std::chrono::seconds(3400));
  EXPECT_NE(r.body.find("emulated-seed-2"), std::string::npos);
  EXPECT_EQ(server_.Render(Get("/computeMetadata/v1/instance/service-accounts/nobody/token"), now_)
                .status,
            404);
}

TEST_F(MetadataServerTest, WaitForChangeParksUntilTheEtagMoves) {
  HttpRequest poll =
      Get("/computeMetadata/v1/instance/preempted?wait_for_change=true&timeout_sec=30");
  MetadataServer::Answer a = server_.Handle(poll, now_);
  ASSERT_TRUE(a.wait);
  EXPECT_EQ(a.wait_timeout, std::chrono::seconds(30));
  std::string doc = kDoc;
  doc.replace(doc.find("\"FALSE\""), 7, "\"TRUE\"");
  ASSERT_TRUE(server_.SetDocument(doc).ok());
  HttpResponse r = server_.Render(poll, now_);
  EXPECT_NE(r.etag, a.wait_etag);
  EXPECT_EQ(r.body, "TRUE");
  // With a stale last_etag the answer is immediate.
  HttpRequest stale =
      Get("/computeMetadata/v1/instance/preempted?wait_for_change=true&last_etag=" + a.wait_etag);
  EXPECT_FALSE(server_.Handle(stale, now_).wait);
  // Without a timeout: the default.
  HttpRequest forever = Get("/computeMetadata/v1/instance/preempted?wait_for_change=true");
  EXPECT_EQ(server_.Handle(forever, now_).wait_timeout, kDefaultWaitTimeout);
}

TEST(HttpWire, ParsesRequestHeads) {
  Result<HttpRequest> r = ParseHttpRequestHead(
      "GET /computeMetadata/v1/ HTTP/1.1\r\nHost: metadata.google.internal\r\n"
      "Metadata-Flavor: Google\r\nConnection: close\r\n\r\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->method, "GET");
  EXPECT_EQ(r->headers["metadata-flavor"], "Google");
  EXPECT_FALSE(r->keep_alive);
  EXPECT_FALSE(r->has_body);
  r = ParseHttpRequestHead("GET / HTTP/1.0\r\n\r\n");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->keep_alive);
  EXPECT_TRUE(ParseHttpRequestHead("POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\n")->has_body);
  EXPECT_FALSE(ParseHttpRequestHead("GARBAGE\r\n\r\n").ok());
  EXPECT_FALSE(ParseHttpRequestHead("GET / HTTP/1.1\r\nno colon\r\n\r\n").ok());
}

TEST(HttpWire, ResponsesCarryTheFlavorHeader) {
  HttpResponse r;
  r.body = "TRUE";
  r.etag = "0123456789abcdef";
  std::string wire = SerializeHttpResponse(r, true);
  EXPECT_EQ(wire.substr(0, 17), "HTTP/1.1 200 OK\r\n");
  EXPECT_NE(wire.find("Metadata-Flavor: Google\r\n"), std::string::npos);
  EXPECT_NE(wire.find("ETag: 0123456789abcdef\r\n"), std::string::npos);
  EXPECT_NE(wire.find("Content-Length: 4\r\n"), std::string::npos);
  EXPECT_EQ(wire.substr(wire.size() - 8), "\r\n\r\nTRUE");
  EXPECT_EQ(SerializeHttpResponse(r, false, /*head_only=*/true).find("TRUE"), std::string::npos);
}

}  // namespace
}  // namespace tpufleet::emulator::hosts
