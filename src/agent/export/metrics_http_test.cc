#include "agent/export/metrics_http.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "agent/export/prometheus_text.h"
#include "util/subprocess.h"
#include "util/testing/fake_clock.h"

namespace tpufleet::agent::exporter {
namespace {

using std::chrono::milliseconds;

// A server on 127.0.0.1 (a free port) answering "up 1\n", on a loop this test turns.
class MetricsHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Listen("127.0.0.1:0").ok());
    ASSERT_GT(server_.port(), 0);
  }

  // A client connection to the server (the kernel completes it; the server accepts on
  // its next turn).
  UniqueFd Connect() {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(server_.port()));
    ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    return fd;
  }
  void Turns(int n) {
    for (int i = 0; i < n; ++i) {
      loop_.RunOnce(milliseconds(0));
    }
  }
  // Turns the loop until the server closes `fd`; what it sent. Stops after 2000 turns
  // with what there is (a test then fails on the text).
  std::string ReadToClose(int fd) {
    std::string got;
    for (int i = 0; i < 2000; ++i) {
      loop_.RunOnce(milliseconds(5));
      char buf[4096];
      ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0) {
        return got;
      }
      if (n > 0) {
        got.append(buf, static_cast<size_t>(n));
      }
    }
    return got + "<still open>";
  }
  std::string Exchange(std::string_view request) {
    UniqueFd fd = Connect();
    EXPECT_EQ(::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    return ReadToClose(fd.get());
  }

  FakeClock clock_;
  EventLoop loop_{clock_};
  int renders_ = 0;
  MetricsHttpServer server_{loop_, [this] {
                              ++renders_;
                              return std::string("# TYPE up gauge\nup 1\n");
                            }};
};

TEST_F(MetricsHttpTest, GetMetricsIsTheTextAndTheConnectionCloses) {
  EXPECT_EQ(Exchange("GET /metrics HTTP/1.1\r\nHost: worker-0:9100\r\n"
                     "Accept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\r\n"
                     "Accept-Encoding: gzip\r\n\r\n"),
            "HTTP/1.0 200 OK\r\n"
            "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
            "Content-Length: 21\r\n"
            "Connection: close\r\n\r\n"
            "# TYPE up gauge\nup 1\n");
  EXPECT_EQ(renders_, 1);
  Turns(2);
  EXPECT_EQ(server_.connections(), 0u);
  // A query string changes nothing; a bare-LF head is a head too.
  EXPECT_NE(Exchange("GET /metrics?x=1 HTTP/1.0\n\n").find("200 OK"), std::string::npos);
}

TEST_F(MetricsHttpTest, AnythingElseIsRefused) {
  std::string r = Exchange("GET / HTTP/1.1\r\n\r\n");
  EXPECT_EQ(r.substr(0, r.find("\r\n")), "HTTP/1.0 404 Not Found");
  EXPECT_NE(r.find("\r\n\r\nnot found: this server serves GET /metrics only\n"),
            std::string::npos);
  r = Exchange("POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello");
  EXPECT_EQ(r.substr(0, r.find("\r\n")), "HTTP/1.0 405 Method Not Allowed");
  EXPECT_NE(r.find("\r\nAllow: GET\r\n"), std::string::npos);
  r = Exchange("HEAD /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(r.substr(0, r.find("\r\n")), "HTTP/1.0 405 Method Not Allowed");
  r = Exchange("\x16\x03\x01 a TLS hello\r\n\r\n");
  EXPECT_EQ(r.substr(0, r.find("\r\n")), "HTTP/1.0 400 Bad Request");
  r = Exchange("GET /metrics HTTP/1.1\r\nX-Long: " + std::string(kMaxRequestHead, 'a') + "\r\n\r\n");
  EXPECT_EQ(r.substr(0, r.find("\r\n")), "HTTP/1.0 431 Request Header Fields Too Large");
  EXPECT_EQ(renders_, 0);
}

TEST_F(MetricsHttpTest, ASilentClientIsClosedAfterTheTimeout) {
  UniqueFd fd = Connect();
  ASSERT_EQ(::send(fd.get(), "GET /met", 8, MSG_NOSIGNAL), 8);
  Turns(3);
  EXPECT_EQ(server_.connections(), 1u);
  clock_.Advance(kClientTimeout - milliseconds(1));
  Turns(2);
  EXPECT_EQ(server_.connections(), 1u);
  clock_.Advance(milliseconds(1));
  Turns(2);
  EXPECT_EQ(server_.connections(), 0u);
  char c;
  EXPECT_EQ(::recv(fd.get(), &c, 1, MSG_DONTWAIT), 0);  // closed, with no answer
}

TEST_F(MetricsHttpTest, ConnectionsAreBoundedAndTheNextWaitsForAFreeSlot) {
  std::vector<UniqueFd> idle;
  for (size_t i = 0; i < kMaxConnections; ++i) {
    idle.push_back(Connect());
  }
  Turns(3);
  EXPECT_EQ(server_.connections(), kMaxConnections);
  UniqueFd next = Connect();  // the kernel's backlog holds it
  ASSERT_EQ(::send(next.get(), "GET /metrics HTTP/1.0\r\n\r\n", 25, MSG_NOSIGNAL), 25);
  Turns(5);
  EXPECT_EQ(server_.connections(), kMaxConnections);
  char c;
  EXPECT_EQ(::recv(next.get(), &c, 1, MSG_DONTWAIT), -1);  // no answer yet
  idle.front().Reset();  // one leaves: the server sees it, then accepts the next
  EXPECT_NE(ReadToClose(next.get()).find("up 1\n"), std::string::npos);
}

TEST_F(MetricsHttpTest, ABadOrBusyAddressIsRefusedWithTheReason) {
  MetricsHttpServer other(loop_, [] { return std::string(); });
  Status s = other.Listen("127.0.0.1:" + std::to_string(server_.port()));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "127.0.0.1:" + std::to_string(server_.port()) +
                             ": Address already in use");
  for (const char* bad : {"", "x", "70000", "-1", "localhost:9100", "1.2.3:9100", ":"}) {
    Result<sockaddr_in> a = ParseListenAddress(bad);
    EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(ParseListenAddress("localhost:9100").status().message(),
            "bad listen address \"localhost:9100\": the address is not an IPv4 address "
            "(expected PORT or IPV4:PORT, such as 9100 or 127.0.0.1:9100)");
  Result<sockaddr_in> a = ParseListenAddress("9100");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(ntohs(a->sin_port), 9100);
  EXPECT_EQ(a->sin_addr.s_addr, htonl(INADDR_ANY));
}

// curl, a client no test wrote, against the server on a loop of its own thread.
TEST(MetricsHttpCurl, CurlReadsTheMetrics) {
  const char* curl = "/usr/bin/curl";
  if (::access(curl, X_OK) != 0) {
    GTEST_SKIP() << "no " << curl;
  }
  RealClock clock;
  EventLoop loop(clock);
  ASSERT_TRUE(loop.EnableWake().ok());
  MetricsHttpServer server(loop, [] { return std::string("# TYPE up gauge\nup 1\n"); });
  ASSERT_TRUE(server.Listen("127.0.0.1:0").ok());
  std::thread t([&] { loop.Run(); });
  std::string url = "http://127.0.0.1:" + std::to_string(server.port());
  Result<ProgramResult> ok = RunUserCommand(
      {curl, "-sS", "--max-time", "10", "-D", "-", url + "/metrics"}, "", std::chrono::seconds(20));
  Result<ProgramResult> missing = RunUserCommand(
      {curl, "-sS", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}", url + "/"}, "",
      std::chrono::seconds(20));
  loop.Stop();
  t.join();
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->exit_code, 0) << ok->output;
  EXPECT_NE(ok->output.find("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"),
            std::string::npos)
      << ok->output;
  EXPECT_NE(ok->output.find("\r\n\r\n# TYPE up gauge\nup 1\n"), std::string::npos) << ok->output;
  ASSERT_TRUE(missing.ok()) << missing.status().ToString();
  EXPECT_EQ(missing->output, "404");
}

}  // namespace
}  // namespace tpufleet::agent::exporter
