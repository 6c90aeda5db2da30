// ServerClient's pinning and messages over a fake transport that plays a serve whose
// certificate the test chooses (the real handshake is test/serve_remote_e2e.sh's): the
// first use pins, a changed certificate is refused before the token goes out, a
// fingerprint given ahead is used without trust on first use, and each failure is one
// message.
#include "remote/server_client.h"

#include <gtest/gtest.h>

#include "remote/known_servers.h"
#include "util/fingerprint.h"
#include "util/testing/fake_http.h"
#include "util/file.h"
#include "util/testing/temp_dir.h"

namespace tpufleet::remote {
namespace {

const std::string kOld = Sha256Fingerprint("old certificate");
const std::string kNew = Sha256Fingerprint("new certificate");

// A serve on the other end: presents `cert`, as CurlHttpClient checks a pin.
class FakeServe final : public HttpClient {
 public:
  std::string cert = kOld;
  int status = 200;
  std::string body = api::ToJson(api::CommandResult{0, "No nodes.\n", ""});
  std::optional<Status> unreachable;
  std::vector<HttpRequest> sent;  // what reached the server (past the handshake)

  Result<HttpResponse> Send(const HttpRequest& req) override {
    if (unreachable) {
      return *unreachable;
    }
    if (req.pinned_cert != kAnyCertificate && req.pinned_cert != cert) {
      return PermissionDeniedError("the server's TLS certificate is " + cert +
                                   ", not the pinned " + req.pinned_cert);
    }
    sent.push_back(req);
    return testing::AnswerAsCurlDoes(req, HttpResponse{status, {}, body, cert});
  }
};

class ServerClientTest : public ::testing::Test {
 protected:
  // Runs `argv` on `client`, its stdout kept in printed_.
  Result<RemoteRun> Run(ServerClient& client, const std::vector<std::string>& argv) {
    return client.Run({argv}, [this](api::OutputStream s, std::string_view text) {
      if (s == api::OutputStream::kStdout) {
        printed_.append(text);
      }
    });
  }

  std::map<std::string, std::string> Env() const {
    return {{"HOME", dir_.path()}, {"TPUFLEET_TOKEN", "tpufleet-serve-secret"}};
  }
  ServerOptions Options(const std::string& fingerprint = "") const {
    Result<ServerOptions> o = ResolveServer("https://Lab.example:8471/", fingerprint, Env());
    EXPECT_TRUE(o.ok()) << o.status().ToString();
    return o.ok() ? *o : ServerOptions{};
  }
  std::string Known() const { return dir_.Path(".config/tpufleet/known_servers"); }

  TempDir dir_;
  FakeServe serve_;
  std::string printed_;
};

TEST_F(ServerClientTest, FirstUsePinsAndSaysSo) {
  ServerClient client(&serve_, Options());
  Result<RemoteRun> run = Run(client, {"status"});
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(printed_, "No nodes.\n");
  EXPECT_EQ(run->exit_code, 0);
  EXPECT_EQ(run->notice, "first use of lab.example:8471: pinned its TLS certificate " + kOld +
                             " in " + Known() +
                             "; compare it with the one `tpufleet serve` logged at start");
  EXPECT_EQ(*PinnedFingerprint(Known(), "lab.example:8471"), kOld);
  ASSERT_EQ(serve_.sent.size(), 1u);
  EXPECT_EQ(serve_.sent[0].url, "https://lab.example:8471/v1/command");
  EXPECT_EQ(serve_.sent[0].headers["Authorization"], "Bearer tpufleet-serve-secret");
  EXPECT_EQ(api::ParseCommandRequest(serve_.sent[0].body)->argv,
            std::vector<std::string>{"status"});
  // The next run is pinned, and says nothing.
  Result<RemoteRun> again = Run(client, {"status"});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->notice, "");
  EXPECT_EQ(serve_.sent[1].pinned_cert, kOld);
}

TEST_F(ServerClientTest, AChangedCertificateIsRefusedBeforeTheTokenGoesOut) {
  ASSERT_EQ(PinFingerprint(Known(), "lab.example:8471", kOld), Status::Ok());
  serve_.cert = kNew;
  ServerClient client(&serve_, Options());
  Result<RemoteRun> run = Run(client, {"status"});
  EXPECT_EQ(run.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(run.status().message(),
            "the team server https://lab.example:8471 presents another TLS certificate, " + kNew +
                ", than the one pinned for it, " + kOld + ", in " + Known() +
                " (the line lab.example:8471). Nothing was sent. If its certificate was changed "
                "on purpose, check the new fingerprint with the server's admin (serve logs it at "
                "start), then run once with --server-fingerprint " + kNew + " to pin it.");
  // Only the probe, without the token, reached the server.
  ASSERT_EQ(serve_.sent.size(), 1u);
  EXPECT_EQ(serve_.sent[0].headers.count("Authorization"), 0u);
  EXPECT_EQ(*PinnedFingerprint(Known(), "lab.example:8471"), kOld);

  // Accepted as the message says: the new one replaces the old.
  ServerClient accepting(&serve_, Options(kNew));
  Result<RemoteRun> accepted = Run(accepting, {"status"});
  ASSERT_TRUE(accepted.ok()) << accepted.status().ToString();
  EXPECT_EQ(*PinnedFingerprint(Known(), "lab.example:8471"), kNew);
  EXPECT_NE(accepted->notice.find("replaced the pinned TLS certificate"), std::string::npos);
}

TEST_F(ServerClientTest, APrePinnedFingerprintIsUsedWithoutTrustOnFirstUse) {
  ServerClient wrong(&serve_, Options(kNew));  // the server presents kOld
  EXPECT_EQ(Run(wrong, {"status"}).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(*PinnedFingerprint(Known(), "lab.example:8471"), std::nullopt);
  ServerClient right(&serve_, Options(kOld));
  Result<RemoteRun> run = Run(right, {"status"});
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(serve_.sent.back().pinned_cert, kOld);
  EXPECT_EQ(*PinnedFingerprint(Known(), "lab.example:8471"), kOld);
}

TEST_F(ServerClientTest, EachFailureIsOneMessage) {
  serve_.status = 401;
  serve_.body = R"({"error": {"code": "unauthenticated", "message": "the token is not serve's"}})";
  ServerClient client(&serve_, Options());
  Result<RemoteRun> refused = Run(client, {"jobs"});
  EXPECT_EQ(refused.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(refused.status().message(),
            "the team server https://lab.example:8471 refused the token (from TPUFLEET_TOKEN): "
            "the token is not serve's");
  // An answer cut before the exit code (serve stopped): what came is printed, and the
  // run fails.
  serve_.status = 200;
  serve_.body = api::FrameOutput(api::OutputStream::kStdout, "NODE  STATE\n");
  Result<RemoteRun> cut = Run(client, {"jobs"});
  EXPECT_EQ(cut.status().ToString(),
            "unavailable: the team server https://lab.example:8471: the server closed the "
            "connection before the command ended");
  EXPECT_EQ(printed_, "NODE  STATE\n");
  serve_.unreachable = UnavailableError("POST https://lab.example:8471/v1/command: "
                                        "Couldn't connect to server");
  Result<RemoteRun> down = Run(client, {"jobs"});
  EXPECT_EQ(down.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(down.status().message(),
            "cannot reach the team server https://lab.example:8471: POST "
            "https://lab.example:8471/v1/command: Couldn't connect to server");
}

TEST_F(ServerClientTest, BadUrlsFingerprintsAndTokensAreRefused) {
  auto code = [&](const std::string& url, const std::string& fp,
                  std::map<std::string, std::string> env) {
    return ResolveServer(url, fp, env).status().code();
  };
  EXPECT_EQ(code("lab:8471", "", Env()), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("https://lab:8471/v1", "", Env()), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("https://lab:0", "", Env()), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("http://lab:8471", "", Env()), StatusCode::kInvalidArgument);  // not loopback
  EXPECT_EQ(code("http://127.0.0.1:8471", "", Env()), StatusCode::kOk);
  EXPECT_EQ(code("https://[::1]:8471", "", Env()), StatusCode::kOk);
  EXPECT_EQ(code("https://lab:8471", "SHA256:short", Env()), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("https://lab:8471", "", {{"HOME", dir_.path()}}),
            StatusCode::kFailedPrecondition);  // no token anywhere

  // A token file: the user's own and private, else refused naming it.
  std::string file = dir_.Path("token");
  ASSERT_EQ(WriteFileAtomic(file, "tpufleet-serve-x\n", 0644), Status::Ok());
  Result<ServerOptions> shared =
      ResolveServer("https://lab:8471", "", {{"HOME", dir_.path()}, {"TPUFLEET_TOKEN_FILE", file}});
  EXPECT_EQ(shared.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(shared.status().message().find(file + " has mode 0644"), std::string::npos);
  ASSERT_EQ(WriteFileAtomic(file, "tpufleet-serve-x\n", 0600), Status::Ok());
  Result<ServerOptions> ok =
      ResolveServer("https://lab:8471", "", {{"HOME", dir_.path()}, {"TPUFLEET_TOKEN_FILE", file}});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->token, "tpufleet-serve-x");
  EXPECT_EQ(ok->token_source, file);
}

}  // namespace
}  // namespace tpufleet::remote
