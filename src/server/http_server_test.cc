// serve's API over real HTTP on loopback, as a client, a browser and an attacker on this
// machine would meet it: the token on every route, web pages refused, sizes bounded.
#include "server/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "httpd/bounded_server.h"
#include "store/sqlite_store.h"
#include "util/testing/fake_clock.h"

namespace tpufleet::server {
namespace {

using nlohmann::json;

constexpr const char* kToken = "tpufleet-serve-test-token";

class ServeHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = SqliteStore::Open(":memory:").value();
    NodeRecord n;
    n.fleet = "lab";
    n.name = "trainer";
    n.provider = "gcp-tpu";
    n.zone = "us-central2-b";
    n.type = "v4-32";
    n.capacity = "spot";
    n.state = NodeState::Parse("READY");
    n.created_at = clock_.Now() - std::chrono::minutes(10);
    ASSERT_TRUE(store_->PutNode(n).ok());
    n.fleet = "other";
    n.name = "not-kept";
    ASSERT_TRUE(store_->PutNode(n).ok());
    Event("preempted", "signal=agents workers=4", -300);
    Event("recovered", "seconds=41.5", -200);
    ServeRecord r{4242, "lab-1", {"lab"}, clock_.Now() - std::chrono::hours(1), clock_.Now()};
    ASSERT_TRUE(store_->PutServe(r).ok());
    JobRecord j;
    j.fleet = "lab";
    j.node = "trainer";
    j.id = "j-1";
    j.name = "train";
    j.restart = "on-preemption";
    j.restarts = 1;
    j.state = "active";
    j.last_reason = "preempted";
    ASSERT_TRUE(store_->PutJob(j).ok());
    ServeSnapshot snap;
    snap.last_pass = clock_.Now() - std::chrono::seconds(3);
    snap.passes = 9;
    snap.nodes_by_state = {{"lab", {{"READY", 1}}}};
    snap.recover_seconds = {41.5};
    snap.warnings = {"waiting for `tpufleet up` (pid 12)"};
    view_.Publish(snap);
    api_ = std::make_unique<ServeApi>(
        ServeApiContext{kToken, &view_, store_.get(), &clock_});
    server_ = std::make_unique<ServeHttpServer>(api_.get(), "127.0.0.1", 0);
    Result<int> port = server_->Start();
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    port_ = *port;
  }

  void Event(const std::string& kind, const std::string& detail, int seconds_from_now) {
    ASSERT_TRUE(store_
                    ->AddEvent({0, clock_.Now() + std::chrono::seconds(seconds_from_now), "lab",
                                "trainer", kind, detail})
                    .ok());
  }

  httplib::Result Get(const std::string& path, httplib::Headers headers = {}) {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(5);
    return c.Get(path.c_str(), headers);
  }
  httplib::Headers Auth(const std::string& token = kToken) {
    return {{"Authorization", "Bearer " + token}};
  }

  FakeClock clock_;
  std::unique_ptr<SqliteStore> store_;
  PublishedServeView view_;
  std::unique_ptr<ServeApi> api_;
  std::unique_ptr<ServeHttpServer> server_;
  int port_ = 0;
};

TEST_F(ServeHttpTest, StatusShowsTheProcessAndTheKeptNodes) {
  httplib::Result r = Get("/v1/status", Auth());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["serve"]["pid"], 4242);
  EXPECT_EQ(j["serve"]["fleets"], json::array({"lab"}));
  EXPECT_EQ(j["serve"]["passes"], 9);
  EXPECT_EQ(j["serve"]["last_pass_seconds_ago"], 3.0);
  ASSERT_EQ(j["nodes"].size(), 1u) << "only the fleets serve keeps";
  EXPECT_EQ(j["nodes"][0]["node"], "trainer");
  EXPECT_EQ(j["nodes"][0]["state"], "READY");
  EXPECT_EQ(j["nodes"][0]["age_seconds"], 600);
  EXPECT_EQ(j["nodes"][0]["last_recover_seconds"], 41.5);
  EXPECT_EQ(j["warnings"][0], "waiting for `tpufleet up` (pid 12)");
}

TEST_F(ServeHttpTest, EventsSinceAndByKind) {
  httplib::Result r = Get("/v1/events?since=4m", Auth());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  ASSERT_EQ(j.size(), 1u) << r->body;
  EXPECT_EQ(j[0]["kind"], "recovered");
  r = Get("/v1/events?kind=preempted&fleet=lab", Auth());
  ASSERT_TRUE(r);
  j = json::parse(r->body);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["detail"], "signal=agents workers=4");
  r = Get("/v1/events?since=yesterday", Auth());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("since must be a time"), std::string::npos) << r->body;
  r = Get("/v1/events?limit=100000", Auth());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << "a bounded answer";
}

TEST_F(ServeHttpTest, JobsAndMetrics) {
  httplib::Result r = Get("/v1/jobs", Auth());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  ASSERT_EQ(j["jobs"].size(), 1u);
  EXPECT_EQ(j["jobs"][0]["restarts"], 1);
  r = Get("/metrics", Auth());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(r->body.find("tpufleet_nodes{fleet=\"lab\",state=\"READY\"} 1\n"), std::string::npos)
      << r->body;
  EXPECT_NE(r->body.find("tpufleet_time_to_recover_seconds_count 1\n"), std::string::npos);
}

TEST_F(ServeHttpTest, AMissingOrWrongTokenIsRefusedOnEveryRoute) {
  for (const char* path : {"/v1/status", "/v1/events", "/v1/jobs", "/metrics", "/nope"}) {
    httplib::Result r = Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 401) << path;
    EXPECT_EQ(r->get_header_value("WWW-Authenticate"), "Bearer");
    EXPECT_NE(r->body.find("Authorization: Bearer TOKEN"), std::string::npos) << r->body;
    EXPECT_EQ(r->body.find("4242"), std::string::npos) << "nothing of the state leaks";
    r = Get(path, Auth("tpufleet-serve-guess"));
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 401) << path;
    r = Get(path, {{"Authorization", std::string("Basic ") + kToken}});
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 401) << path;
  }
  httplib::Result r = Get("/nope", Auth());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  httplib::Client c("127.0.0.1", port_);
  r = c.Delete("/v1/jobs", Auth());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
}

// The dashboard's files are served to anyone (they hold no data) with a policy that
// keeps the page to them; its own requests (Origin: this server) reach the API, which
// still wants the token.
TEST_F(ServeHttpTest, Issue17TheDashboardIsServedAndItsOwnRequestsPass) {
  httplib::Client c("127.0.0.1", port_);
  httplib::Result page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page->body.find("<script src=\"/ui/dashboard.js\" defer></script>"),
            std::string::npos);
  EXPECT_NE(page->get_header_value("Content-Security-Policy").find("script-src 'self'"),
            std::string::npos);
  EXPECT_EQ(page->get_header_value("X-Frame-Options"), "DENY");
  httplib::Result js = c.Get("/ui/dashboard.js");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->status, 200);
  EXPECT_EQ(js->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_NE(js->body.find("/v1/command"), std::string::npos);
  httplib::Result css = c.Get("/ui/dashboard.css");
  ASSERT_TRUE(css);
  EXPECT_EQ(css->get_header_value("Content-Type"), "text/css; charset=utf-8");
  EXPECT_EQ(c.Get("/ui/other.js")->status, 401);  // no such file: the API's, with no token

  std::string self = "http://127.0.0.1:" + std::to_string(port_);
  httplib::Headers own = {{"Origin", self}};
  EXPECT_EQ(c.Get("/v1/status", own)->status, 401);  // its own page, still no token
  own = Auth();
  own.emplace("Origin", self);
  EXPECT_EQ(c.Get("/v1/status", own)->status, 200);
  // The same page served by another name or scheme is another site.
  for (const std::string& other : {"http://localhost:" + std::to_string(port_),
                                   "https://127.0.0.1:" + std::to_string(port_)}) {
    httplib::Headers h = Auth();
    h.emplace("Origin", other);
    EXPECT_EQ(c.Get("/v1/status", h)->status, 403) << other;
  }
}

// A page open in a browser here must not reach the API, not even with the token (which
// it should never hold): a cross-site request carries Origin, DNS rebinding a foreign Host.
TEST_F(ServeHttpTest, ABrowserLikeCrossSiteRequestIsRefused) {
  httplib::Headers h = Auth();
  h.emplace("Origin", "http://evil.example");
  httplib::Result r = Get("/v1/status", h);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_NE(r->body.find("Origin"), std::string::npos) << r->body;
  httplib::Client c("127.0.0.1", port_);
  h = Auth();
  h.emplace("Host", "evil.example:" + std::to_string(port_));
  r = c.Get("/v1/status", h);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_NE(r->body.find("evil.example"), std::string::npos) << r->body;
  h = Auth();
  h.emplace("Host", "localhost:" + std::to_string(port_));
  r = c.Get("/v1/status", h);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << "a program naming loopback is served";
}

TEST_F(ServeHttpTest, BodiesAndHeadersAreBounded) {
  httplib::Client c("127.0.0.1", port_);
  httplib::Result r =
      c.Post("/v1/status", Auth(), std::string(kMaxRequestBodyBytes + 1, 'x'), "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  // Endless headers: cut off at the budget (head and body), not read into memory.
  httplib::Headers many = Auth();
  for (size_t i = 0; i < (kMaxRequestBodyBytes + httpd::kMaxRequestHeadBytes) / 1000 + 1; ++i) {
    many.emplace("X-Fill-" + std::to_string(i), std::string(1000, 'y'));
  }
  r = c.Get("/v1/status", many);
  if (r) {
    EXPECT_EQ(r->status, 400) << "over " << kMaxRequestBodyBytes + httpd::kMaxRequestHeadBytes
                              << " bytes of head";
  }
  r = Get("/v1/status", Auth());
  ASSERT_TRUE(r) << "the server still answers";
  EXPECT_EQ(r->status, 200);
}

// A connection to the server on loopback, as raw bytes.
class RawConnection {
 public:
  explicit RawConnection(int port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawConnection() { ::close(fd_); }
  bool connected() const { return connected_; }
  void Send(const std::string& bytes) {
    EXPECT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  // What arrives within `wait`, until the server closes the connection.
  std::string ReadAll(std::chrono::milliseconds wait) {
    std::string got;
    auto deadline = std::chrono::steady_clock::now() + wait;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{fd_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
        closed_ = false;
        return got;
      }
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed_ = true;
        return got;
      }
      got.append(buf, static_cast<size_t>(n));
    }
  }
  bool closed() const { return closed_; }

 private:
  int fd_;
  bool connected_ = false;
  bool closed_ = false;
};

// A client slow to send its request (the bench's: on a machine at load 100 its requests
// came seconds after its connections) is still answered, up to kRequestWait; one that
// sends nothing is closed after it, and its thread freed.
TEST_F(ServeHttpTest, AClientSlowToAskIsAnsweredAndASilentOneClosed) {
  static_assert(kRequestWait >= std::chrono::seconds(3));
  RawConnection slow(port_), silent(port_);
  ASSERT_TRUE(slow.connected() && silent.connected());
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  slow.Send("GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) +
            "\r\nAuthorization: Bearer " + kToken + "\r\n\r\n");
  std::string answer = slow.ReadAll(std::chrono::seconds(5));
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
  EXPECT_TRUE(slow.closed()) << "one request per connection";
  EXPECT_EQ(silent.ReadAll(kRequestWait + std::chrono::seconds(3)), "");
  EXPECT_TRUE(silent.closed());
}

TEST(ServeHttpServer, ABusyPortIsOneMessage) {
  ServeApi api(ServeApiContext{});
  ServeHttpServer first(&api, "127.0.0.1", 0);
  Result<int> port = first.Start();
  ASSERT_TRUE(port.ok());
  ServeHttpServer second(&api, "127.0.0.1", *port);
  Result<int> again = second.Start();
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(again.status().message().find("cannot listen on 127.0.0.1:" + std::to_string(*port)),
            std::string::npos)
      << again.status().message();
}

}  // namespace
}  // namespace tpufleet::server
