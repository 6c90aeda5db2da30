#include "util/http_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "util/unique_fd.h"

namespace tpufleet {
namespace {

TEST(CurlHttpClient, UnreachableAddressIsUnavailableAndRedacted) {
  // Port 1 on loopback: nothing listens, the connection is refused at once.
  CurlHttpClient client;
  HttpRequest req;
  req.url = "http://127.0.0.1:1/v2/x?access_token=ya29.secretsecret";
  Result<HttpResponse> r = client.Send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.status().message().find("secretsecret"), std::string::npos) << r.status().message();
}

// ---- Issue 10: a server that never stops sending ----

// One HTTP server on 127.0.0.1 for one request, on a thread: it answers with `head`
// and then `body_bytes` of 'x' (bounded, so a client without a cap still ends), and
// counts what it managed to send before the client hung up. `hold`: then it waits,
// silent, until the client hangs up.
class EndlessServer {
 public:
  EndlessServer(std::string head, size_t body_bytes, bool hold = false)
      : head_(std::move(head)), body_(body_bytes), hold_(hold) {
    listener_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listener_.get(), 1) != 0 ||
        ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~EndlessServer() {
    if (thread_.joinable()) {
      thread_.join();
    }
  }
  EndlessServer(const EndlessServer&) = delete;
  EndlessServer& operator=(const EndlessServer&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/big"; }
  int port() const { return port_; }
  size_t sent() const { return sent_; }

 private:
  void Serve() {
    pollfd p{listener_.get(), POLLIN, 0};
    if (::poll(&p, 1, 10000) <= 0) {
      return;
    }
    UniqueFd fd(::accept(listener_.get(), nullptr, nullptr));
    char buf[4096];
    std::string request;
    while (request.find("\r\n\r\n") == std::string::npos) {
      ssize_t n = ::read(fd.get(), buf, sizeof buf);
      if (n <= 0) {
        return;
      }
      request.append(buf, static_cast<size_t>(n));
    }
    if (::send(fd.get(), head_.data(), head_.size(), MSG_NOSIGNAL) < 0) {
      return;
    }
    std::string chunk(64 * 1024, 'x');
    while (sent_ < body_) {
      size_t want = std::min(chunk.size(), body_ - sent_);
      ssize_t n = ::send(fd.get(), chunk.data(), want, MSG_NOSIGNAL);
      if (n <= 0) {
        return;  // the client hung up
      }
      sent_ += static_cast<size_t>(n);
    }
    while (hold_ && ::read(fd.get(), buf, sizeof buf) > 0) {
    }
  }

  std::string head_;
  size_t body_;
  bool hold_;
  UniqueFd listener_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<size_t> sent_{0};
};

// GET of `server`'s URL by the real client, keeping at most `cap` bytes of body.
Result<HttpResponse> Get(const EndlessServer& server, size_t cap) {
  if (server.port() == 0) {
    return InternalError("the test server could not listen");
  }
  CurlHttpClient client;
  HttpRequest req;
  req.url = server.url();
  req.max_response_bytes = cap;
  return client.Send(req);
}

TEST(Issue10, AResponseWithoutALengthStopsAtTheCap) {
  // No Content-Length, no end: the server sends until the client hangs up (here, at
  // most 256 MiB, so that a client without a cap fails the test instead of hanging).
  constexpr size_t kServerSends = 256u << 20;
  EndlessServer server("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                       "Connection: close\r\n\r\n",
                       kServerSends);
  Result<HttpResponse> r = Get(server, 1 << 20);
  ASSERT_FALSE(r.ok()) << "a body of " << (r.ok() ? r->body.size() : 0) << " bytes was kept";
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  EXPECT_EQ(r.status().message(),
            "GET " + server.url() +
                ": the response is larger than 1 MiB, the most tpufleet accepts; the transfer "
                "was stopped");
}

TEST(Issue10, AnAnnouncedOversizedResponseIsRefusedBeforeItsBody) {
  EndlessServer server("HTTP/1.1 200 OK\r\nContent-Length: 1099511627776\r\n\r\n", 1 << 20);
  Result<HttpResponse> r = Get(server, 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("larger than 1 MiB"), std::string::npos)
      << r.status().message();
}

TEST(Issue10, TheDefaultCapIs64MiB) {
  EXPECT_EQ(HttpRequest{}.max_response_bytes, size_t{64} << 20);
  // A body at the cap is accepted.
  EndlessServer server("HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\n", 4096);
  Result<HttpResponse> r = Get(server, 4096);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body.size(), 4096u);
}

TEST(Issue10, EndlessHeadersStopAtTheirCap) {
  std::string head = "HTTP/1.1 200 OK\r\n";
  for (int i = 0; head.size() < 2 * kMaxHttpHeaderBytes; ++i) {
    head += "X-Junk-" + std::to_string(i) + ": " + std::string(1000, 'j') + "\r\n";
  }
  head += "\r\n";
  EndlessServer server(head, 0);
  Result<HttpResponse> r = Get(server, kMaxHttpResponseBytes);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("headers pass 256 KiB"), std::string::npos)
      << r.status().message();
}

// ---- Issue 16: a body received as it arrives (a served command's stream) ----

constexpr char kStreamHead[] = "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n"
                               "Connection: close\r\n\r\n";

TEST(Issue16, ABodyIsGivenAsItArrivesPastTheCapUntilTheCallerStops) {
  EndlessServer server(kStreamHead, 256u << 20);
  CurlHttpClient client;
  HttpRequest req;
  req.url = server.url();
  req.max_response_bytes = 1024;  // nothing is held: no cap
  size_t given = 0;
  req.on_body = [&given](std::string_view piece) {
    given += piece.size();
    return given < (1u << 20);
  };
  Result<HttpResponse> r = client.Send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().ToString(), "failed_precondition: GET " + server.url() + ": stopped");
  EXPECT_GE(given, 1u << 20);
}

TEST(Issue16, AnErrorStatusBodyIsCollectedNotGiven) {
  EndlessServer server("HTTP/1.1 403 Forbidden\r\nContent-Length: 4\r\n\r\n", 4);
  CurlHttpClient client;
  HttpRequest req;
  req.url = server.url();
  bool given = false;
  req.on_body = [&given](std::string_view) { return given = true; };
  Result<HttpResponse> r = client.Send(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 403);
  EXPECT_EQ(r->body, "xxxx");
  EXPECT_FALSE(given);
}

TEST(Issue16, AServerSilentPastTheIdleTimeoutEndsTheTransfer) {
  EndlessServer server(kStreamHead, 3, /*hold=*/true);
  CurlHttpClient client;
  HttpRequest req;
  req.url = server.url();
  req.timeout = std::chrono::milliseconds(0);  // none: only silence ends it
  req.idle_timeout = std::chrono::seconds(1);
  std::string body;
  req.on_body = [&body](std::string_view piece) {
    body.append(piece);
    return true;
  };
  Result<HttpResponse> r = client.Send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().ToString(),
            "timeout: GET " + server.url() + ": the server sent nothing for 1 s");
  EXPECT_EQ(body, "xxx");
}

TEST(Issue16, StopEndsAQuietTransfer) {
  EndlessServer server(kStreamHead, 0, /*hold=*/true);
  CurlHttpClient client;
  HttpRequest req;
  req.url = server.url();
  req.timeout = std::chrono::milliseconds(0);
  std::atomic<int> asked{0};
  req.stop = [&asked] { return ++asked > 1; };  // as a Ctrl-C after the first look
  req.on_body = [](std::string_view) { return true; };
  Result<HttpResponse> r = client.Send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().ToString(), "failed_precondition: GET " + server.url() + ": stopped");
}

}  // namespace
}  // namespace tpufleet
