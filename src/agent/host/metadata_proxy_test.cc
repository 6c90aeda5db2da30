// The metadata guard's proxy between a real client socket and a real HTTP server on
// loopback, in a real EventLoop: what it forwards (headers as they came), what it
// refuses and how it says so.
#include "agent/host/metadata_proxy.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>

#include "agent/host/testing/loopback_http.h"
#include "agent/host/user_db.h"

namespace tpufleet::agent::host {
namespace {

using testing::LoopbackHttpServer;
using testing::LoopbackRequest;

class MetadataProxyTest : public ::testing::Test {
 protected:
  // `request` sent to a proxy of `metadata`; all the proxy wrote back, until it closed.
  std::string Exchange(const std::string& metadata, const std::string& request) {
    RealClock clock;
    EventLoop loop(clock);
    MetadataProxy proxy(loop, "http://" + metadata, HostPaths{});
    EXPECT_TRUE(proxy.Listen().ok());
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(proxy.port()));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::send(fd.get(), request.data(), request.size(), 0),
              static_cast<ssize_t>(request.size()));
    std::string got;
    for (int i = 0; i < 2000; ++i) {
      loop.RunOnce(std::chrono::milliseconds(5));
      char buf[4096];
      ssize_t n = ::recv(fd.get(), buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0) {
        return got;
      }
      if (n > 0) {
        got.append(buf, static_cast<size_t>(n));
      }
    }
    return got + "<still open>";
  }
  std::string Seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }
  LoopbackHttpServer::Handler Record(int status, std::string body) {
    return [this, status, body](const LoopbackRequest& r) {
      std::lock_guard<std::mutex> lock(mu_);
      seen_ += r.head;
      return std::pair{status, body};
    };
  }

  std::mutex mu_;
  std::string seen_;  // guarded by mu_
};

TEST_F(MetadataProxyTest, ForwardsWhatMayPassWithItsHeadersAsTheyCame) {
  LoopbackHttpServer metadata(Record(200, "3"));
  std::string got = Exchange(
      metadata.address(),
      "GET /computeMetadata/v1/instance/attributes/agent-worker-number HTTP/1.1\r\n"
      "Host: metadata.google.internal\r\nMetadata-Flavor: Google\r\n"
      "Connection: keep-alive\r\n\r\n");
  EXPECT_EQ(got,
            "HTTP/1.0 200 OK\r\nContent-Type: application/text\r\nContent-Length: 1\r\n"
            "Connection: close\r\nmetadata-flavor: Google\r\n\r\n3");
  std::string seen = Seen();
  EXPECT_EQ(seen.rfind("GET /computeMetadata/v1/instance/attributes/agent-worker-number "
                       "HTTP/1.0\r\n", 0),
            0u)
      << seen;
  EXPECT_NE(seen.find("\r\nHost: metadata.google.internal\r\n"), std::string::npos) << seen;
  EXPECT_NE(seen.find("\r\nMetadata-Flavor: Google\r\n"), std::string::npos) << seen;
  EXPECT_EQ(seen.find("Connection"), std::string::npos) << seen;
  EXPECT_EQ(seen.find("X-Forwarded-For"), std::string::npos) << seen;
}

TEST_F(MetadataProxyTest, RefusesTheTokenNamingTpufleetAndTheAccount) {
  LoopbackHttpServer metadata(Record(200, R"({"access_token":"ya29.x"})"));
  std::string got = Exchange(
      metadata.address(),
      "GET /computeMetadata/v1/instance/service-accounts/default/token HTTP/1.1\r\n"
      "Metadata-Flavor: Google\r\n\r\n");
  // The test's own account: the client socket is this process's.
  std::string me = UserName(ReadPasswd("/etc"), ::geteuid());
  std::string body = "tpufleet: the metadata server does not give the service account's token "
                     "to " + me + ", an account without sudo on this node (the fleet's admin "
                     "can give it sudo)\n";
  EXPECT_EQ(got, "HTTP/1.0 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\n"
                 "Content-Length: " + std::to_string(body.size()) +
                     "\r\nConnection: close\r\nMetadata-Flavor: Google\r\n\r\n" + body);
  EXPECT_EQ(Seen(), "");  // never asked
}

TEST_F(MetadataProxyTest, AnAnswerHoldingATokenIsRefusedToo) {
  LoopbackHttpServer metadata(Record(200, R"({"default":{"token":{"access_token":"ya29.x"}}})"));
  std::string got = Exchange(metadata.address(),
                             "GET /computeMetadata/v1/instance/?recursive=true HTTP/1.0\r\n"
                             "Metadata-Flavor: Google\r\n\r\n");
  EXPECT_EQ(got.rfind("HTTP/1.0 403 Forbidden\r\n", 0), 0u) << got;
  EXPECT_NE(got.find("does not give an access token to "), std::string::npos) << got;
  EXPECT_EQ(got.find("ya29"), std::string::npos) << got;
}

TEST_F(MetadataProxyTest, TheServersRefusalsAndErrorsComeBackAsTheyAre) {
  LoopbackHttpServer metadata(Record(403, "Requests with X-Forwarded-For are refused.\n"));
  std::string got = Exchange(metadata.address(),
                             "GET /computeMetadata/v1/ HTTP/1.1\r\nMetadata-Flavor: Google\r\n"
                             "X-Forwarded-For: 10.0.0.1\r\n\r\n");
  EXPECT_EQ(got.rfind("HTTP/1.0 403 Forbidden\r\n", 0), 0u) << got;
  EXPECT_NE(Seen().find("\r\nX-Forwarded-For: 10.0.0.1\r\n"), std::string::npos) << Seen();

  std::string address;
  {
    LoopbackHttpServer gone(Record(200, ""));
    address = gone.address();
  }
  got = Exchange(address, "GET /computeMetadata/v1/ HTTP/1.1\r\n\r\n");
  EXPECT_EQ(got.rfind("HTTP/1.0 502 Bad Gateway\r\n", 0), 0u) << got;
  EXPECT_NE(got.find("tpufleet: the metadata guard could not get an answer"), std::string::npos)
      << got;

  got = Exchange(address, "PUT /computeMetadata/v1/instance/guest-attributes/a/b HTTP/1.1\r\n"
                          "Content-Length: 3\r\n\r\nabc");
  EXPECT_EQ(got.rfind("HTTP/1.0 405 Method Not Allowed\r\n", 0), 0u) << got;
}

}  // namespace
}  // namespace tpufleet::agent::host
