// `tpufleet join FILE` as a collaborator meets it on their laptop, with a fake team server
// behind the CLI's transport: a malformed invite is one line and leaves nothing; a
// server presenting another certificate than the invite's is refused before the token is
// sent; a good invite keeps the token, pins the certificate, writes the SSH names and
// makes the server the default for the served commands (and only for them).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "api/invite.h"
#include "api/remote_command.h"
#include "cli/testing/run_cli.h"
#include "util/file.h"
#include "util/fingerprint.h"
#include "util/http_client.h"
#include "util/testing/fake_http.h"
#include "util/testing/temp_dir.h"

namespace tpufleet::cli {
namespace {

using cli_testing::Output;
using cli_testing::Tpufleet;

constexpr const char* kHostKey =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB69SJ1+y4FfrZCv79wrUAU/rEiOSE8nvmwomH7/5h77";
constexpr const char* kToken = "tpufleet-person-abcDEF_123-xyz";

// A team server presenting the certificate `cert`: GET /v1/hosts gives pod's two workers,
// POST /v1/command answers "ran".
class FakeTeamServer final : public HttpClient {
 public:
  std::string cert = Sha256Fingerprint("cert");
  std::vector<std::string> paths;  // every path that reached it, with a token
  std::string authorization;       // the last one's

  Result<HttpResponse> Send(const HttpRequest& req) override {
    if (req.pinned_cert != kAnyCertificate && req.pinned_cert != cert) {
      return PermissionDeniedError("the certificate is not the pinned one");
    }
    auto token = req.headers.find("Authorization");
    if (token == req.headers.end()) {  // the client asking which certificate it presents
      return HttpResponse{404, {}, "", cert};
    }
    paths.push_back(req.url.substr(req.url.find("/v1/")));
    authorization = token->second;
    if (paths.back() == "/v1/hosts") {
      return HttpResponse{
          200,
          {},
          api::ToJson(std::vector<api::WorkerHost>{{"lab", "pod", 0, "198.18.0.7", 22, kHostKey},
                                                   {"lab", "pod", 1, "198.18.0.8", 22, kHostKey}}),
          cert};
    }
    return tpufleet::testing::AnswerAsCurlDoes(
        req, HttpResponse{200, {}, api::ToJson(api::CommandResult{0, "ran\n", ""}), cert});
  }
};

class JoinTest : public ::testing::Test {
 protected:
  JoinTest() { app_.server_http = &server_; }
  std::map<std::string, std::string> Env() const { return {{"HOME", home_.path()}}; }
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = home_.path() + "/" + name;
    EXPECT_TRUE(WriteFileAtomic(path, text, 0600).ok());
    return path;
  }
  std::string Invite(const std::string& fingerprint = Sha256Fingerprint("cert")) {
    return Write("milo.tpufleet-invite",
                 api::ToJson(api::Invite{"https://lab:8471", fingerprint, "milo", kToken}));
  }
  bool Exists(const std::string& rel) const {
    struct stat st {};
    return ::stat((home_.path() + "/" + rel).c_str(), &st) == 0;
  }
  std::string Read(const std::string& rel) const {
    Result<std::string> text = ReadFile(home_.path() + "/" + rel);
    return text.ok() ? *text : "";
  }

  TempDir home_;
  FakeTeamServer server_;
  App app_{CliCommands(), nullptr};
};

TEST_F(JoinTest, AMalformedInviteIsOneLineAndLeavesNothing) {
  std::string bad = Write("bad", "{\"tpufleet_invite\": 1, \"server\": \"https://lab:8471\"}");
  Output o = Tpufleet(app_, {"join", bad}, Env());
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err,
            "tpufleet: error: " + bad + ": its \"fingerprint\" is not a certificate's SHA256:…\n");
  std::string serves =
      Write("serve-token", api::ToJson(api::Invite{"https://lab:8471", Sha256Fingerprint("cert"),
                                                   "milo", "tpufleet-serve-abc"}));
  o = Tpufleet(app_, {"join", serves}, Env());
  EXPECT_EQ(o.err, "tpufleet: error: " + serves + ": its \"token\" is not a person's token\n");
  o = Tpufleet(app_, {"join"}, Env());
  EXPECT_EQ(o.code, 2);
  EXPECT_TRUE(server_.paths.empty());
  EXPECT_FALSE(Exists(".config"));
  EXPECT_FALSE(Exists(".ssh"));
}

TEST_F(JoinTest, AnotherCertificateIsRefusedBeforeTheTokenGoesOut) {
  std::string invite = Invite(Sha256Fingerprint("another"));
  Output o = Tpufleet(app_, {"join", invite}, Env());
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.err.find("presents another TLS certificate, " + Sha256Fingerprint("cert") +
                       ", than the one pinned for it, " + Sha256Fingerprint("another") +
                       ", in the invite " + invite + ". Nothing was sent."),
            std::string::npos)
      << o.err;
  EXPECT_TRUE(server_.paths.empty());
  EXPECT_FALSE(Exists(".config/tpufleet/server"));
  EXPECT_FALSE(Exists(".config/tpufleet/known_servers"));
  EXPECT_FALSE(Exists(".ssh"));
}

TEST_F(JoinTest, KeepsTheTokenWritesTheNamesAndMakesTheServerTheDefault) {
  Output o = Tpufleet(app_, {"join", Invite()}, Env());
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("Joined https://lab:8471 as milo"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("  pod (worker 0)\n  pod-w0\n  pod-w1\n"), std::string::npos) << o.out;
  EXPECT_EQ(server_.authorization, std::string("Bearer ") + kToken);
  struct stat st {};
  ASSERT_EQ(::stat((home_.path() + "/.config/tpufleet/servers/lab:8471").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(Read(".config/tpufleet/known_servers"), "lab:8471 " + Sha256Fingerprint("cert") + "\n");
  std::string dir = home_.path() + "/.ssh/tpufleet/lab:8471";
  EXPECT_EQ(Read(".ssh/config").rfind("Include " + dir + "/config\n", 0), 0u)
      << Read(".ssh/config");
  std::string config = Read(".ssh/tpufleet/lab:8471/config");
  for (const std::string& line : {std::string("Host pod-w1\n"), std::string("  User milo\n"),
                                  std::string("  StrictHostKeyChecking yes\n"),
                                  std::string(" ssh-proxy --server https://lab:8471 -- pod 1\n"),
                                  "  UserKnownHostsFile " + dir + "/known_hosts\n"}) {
    EXPECT_NE(config.find(line), std::string::npos) << line << " in\n" << config;
  }
  EXPECT_EQ(config.find("IdentityFile"), std::string::npos) << "their own keys";
  EXPECT_NE(Read(".ssh/tpufleet/lab:8471/known_hosts").find(std::string("pod-w1 ") + kHostKey),
            std::string::npos);

  // A served command goes to the joined server with its token, no --server given.
  server_.paths.clear();
  Output jobs = Tpufleet(app_, {"jobs"}, Env());
  EXPECT_EQ(jobs.code, 0) << jobs.err;
  EXPECT_EQ(jobs.out, "ran\n");
  EXPECT_EQ(server_.paths, std::vector<std::string>{"/v1/command"});
  EXPECT_EQ(server_.authorization, std::string("Bearer ") + kToken);
  // TPUFLEET_SERVER set empty: here; and a command that needs no state stays here.
  std::map<std::string, std::string> here = Env();
  here["TPUFLEET_SERVER"] = "";
  Tpufleet(app_, {"jobs"}, here);
  Tpufleet(app_, {"catalog"}, Env());
  EXPECT_EQ(server_.paths.size(), 1u);
}

}  // namespace
}  // namespace tpufleet::cli
