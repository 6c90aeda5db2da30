// serve's API over TLS on loopback, as the CLI (util's CurlHttpClient, pinning the
// certificate), another client and an attacker on this machine meet it: the certificate
// serve made is the one presented, a client pinned to another sends nothing, plain HTTP
// gets no answer, and POST /v1/command runs what it is given only for the token.
#include <httplib.h>

#include <gtest/gtest.h>

#include <atomic>
#include <ostream>

#include "api/remote_command.h"
#include "server/http_server.h"
#include "server/tls_identity.h"
#include "store/sqlite_store.h"
#include "util/fingerprint.h"
#include "util/http_client.h"
#include "util/testing/temp_dir.h"

namespace tpufleet::server {
namespace {

constexpr const char* kTlsToken = "tpufleet-serve-tls-token";

class TlsServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<TlsIdentity> id =
        LoadOrMakeServeIdentity(dir_.path(), ServeCertificateNames("127.0.0.1", "lab"));
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    identity_ = *id;
    ServeApiContext context;
    context.token = kTlsToken;
    context.store = store_.get();  // where a token that is not serve's is looked up
    context.run_command = [this](const api::CommandRequest& request, const Caller& caller,
                                 std::ostream& out, std::ostream&, const std::atomic<bool>&) {
      ++runs_;
      out << Join(request.argv, " ") << " for " << caller.name << "\n";
      return 0;
    };
    api_ = std::make_unique<ServeApi>(std::move(context));
    server_ = std::make_unique<ServeHttpServer>(api_.get(), "127.0.0.1", 0, &identity_);
    Result<int> port = server_->Start();
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    url_ = "https://127.0.0.1:" + std::to_string(*port);
    port_ = *port;
  }

  // POST /v1/command {"argv": argv} through the CLI's transport, pinned to `pin`.
  Result<HttpResponse> Command(const std::vector<std::string>& argv, const std::string& pin,
                               const std::string& token = kTlsToken) {
    HttpRequest req;
    req.method = "POST";
    req.url = url_ + "/v1/command";
    req.headers["Authorization"] = "Bearer " + token;
    req.body = api::ToJson(api::CommandRequest{argv});
    req.pinned_cert = pin;
    req.timeout = std::chrono::seconds(10);
    return http_.Send(req);
  }

  static std::string Join(const std::vector<std::string>& words, const std::string& sep) {
    std::string out;
    for (const std::string& w : words) {
      out += (out.empty() ? "" : sep) + w;
    }
    return out;
  }

  TempDir dir_;
  TlsIdentity identity_;
  std::unique_ptr<SqliteStore> store_ = SqliteStore::Open(":memory:").value();
  std::atomic<int> runs_{0};
  std::unique_ptr<ServeApi> api_;
  std::unique_ptr<ServeHttpServer> server_;
  std::string url_;
  int port_ = 0;
  CurlHttpClient http_;
};

TEST_F(TlsServeTest, APinnedClientGetsTheCommandsOutput) {
  Result<HttpResponse> r = Command({"status", "--json"}, identity_.fingerprint);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->cert_fingerprint, identity_.fingerprint);
  Result<api::CommandResult> out = api::ParseCommandResult(r->body);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->out, "status --json for operator\n");
  // Trust on first use: any certificate, and the client learns which.
  Result<HttpResponse> any = Command({"jobs"}, kAnyCertificate);
  ASSERT_TRUE(any.ok()) << any.status().ToString();
  EXPECT_EQ(any->cert_fingerprint, identity_.fingerprint);
}

TEST_F(TlsServeTest, AClientPinnedToAnotherCertificateSendsNothing) {
  std::string other = Sha256Fingerprint("another certificate");
  Result<HttpResponse> r = Command({"status"}, other);
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(r.status().message().find("the server's TLS certificate is " +
                                      identity_.fingerprint + ", not the pinned " + other),
            std::string::npos)
      << r.status().message();
  EXPECT_EQ(runs_.load(), 0) << "the request reached the server";
}

TEST_F(TlsServeTest, TheCommandRouteNeedsTheTokenAndAPost) {
  Result<HttpResponse> wrong = Command({"status"}, identity_.fingerprint, "tpufleet-serve-no");
  ASSERT_TRUE(wrong.ok());
  EXPECT_EQ(wrong->status, 401);
  EXPECT_EQ(runs_.load(), 0);
  httplib::SSLClient c("127.0.0.1", port_);
  c.enable_server_certificate_verification(false);
  httplib::Headers auth = {{"Authorization", std::string("Bearer ") + kTlsToken}};
  httplib::Result get = c.Get("/v1/command", auth);
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
  httplib::Result bad = c.Post("/v1/command", auth, "{\"argv\": \"status\"}", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400) << bad->body;
  // Another name for this machine is served over TLS; a web page's Origin still is not.
  httplib::Headers named = auth;
  named.emplace("Host", "lab.example:" + std::to_string(port_));
  httplib::Result by_name = c.Get("/v1/no-such-route", named);
  ASSERT_TRUE(by_name);
  EXPECT_EQ(by_name->status, 404) << by_name->body;
  named.emplace("Origin", "https://evil.example");
  httplib::Result page = c.Get("/v1/jobs", named);
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 403);
  // Bounded over TLS as over plain HTTP.
  httplib::Result big = c.Post("/v1/command", auth, std::string(kMaxRequestBodyBytes + 1, 'x'),
                               "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_EQ(runs_.load(), 0);
}

TEST_F(TlsServeTest, PlainHttpGetsNoAnswer) {
  httplib::Client plain("127.0.0.1", port_);
  plain.set_read_timeout(5);
  httplib::Result r = plain.Get("/v1/status", {{"Authorization", std::string("Bearer ") + kTlsToken}});
  EXPECT_FALSE(r && r->status == 200);
}

TEST(ServeCommandRoute, AServeWithoutCommandsSaysSo) {
  ServeApi api(ServeApiContext{kTlsToken, nullptr, nullptr, nullptr, nullptr});
  ApiRequest req{"POST", "/v1/command", {}, {{"authorization", std::string("Bearer ") + kTlsToken}},
                 api::ToJson(api::CommandRequest{{"status"}})};
  ApiResponse r = api.Handle(req);
  EXPECT_EQ(r.status, 404);
  EXPECT_NE(r.body.find("this serve runs no commands"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace tpufleet::server
