// `--server` as a user meets it, with a fake team server behind the CLI's transport: what
// is sent and what is printed, the commands that stay here, the one line for the others;
// and the server's side refusing what it does not run.
#include "cli/remote_command.h"

#include <gtest/gtest.h>

#include "cli/testing/run_cli.h"
#include "util/fingerprint.h"
#include "util/http_client.h"
#include "util/testing/fake_http.h"
#include "util/testing/temp_dir.h"

namespace tpufleet::cli {
namespace {

using cli_testing::Output;
using cli_testing::Tpufleet;

// A team server that answers every command with `result`.
class FakeServer final : public HttpClient {
 public:
  api::CommandResult result{1, "NODE  STATE\npod   READY\n", "tpufleet: warning: \x1b]0;x\n"};
  std::vector<std::string> argv;  // the last command sent
  std::map<std::string, std::string> files;  // and its files

  Result<HttpResponse> Send(const HttpRequest& req) override {
    api::CommandRequest sent = *api::ParseCommandRequest(req.body);
    argv = sent.argv;
    files = sent.files;
    return tpufleet::testing::AnswerAsCurlDoes(
        req, HttpResponse{200, {}, api::ToJson(result), Sha256Fingerprint("cert")});
  }
};

class RemoteCommandTest : public ::testing::Test {
 protected:
  RemoteCommandTest() { app_.server_http = &server_; }
  std::map<std::string, std::string> Env() const {
    return {{"HOME", home_.path()}, {"TPUFLEET_TOKEN", "tpufleet-serve-t"}};
  }

  TempDir home_;
  FakeServer server_;
  App app_{CliCommands(), nullptr};
};

TEST_F(RemoteCommandTest, AServedCommandPrintsWhatTheServerPrinted) {
  Output o = Tpufleet(app_, {"--server", "https://lab:8471", "status", "--json", "pod"}, Env());
  EXPECT_EQ(server_.argv, (std::vector<std::string>{"status", "--json", "pod"}));
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, "NODE  STATE\npod   READY\n");
  // The server's words reach the terminal as text; the first use is said.
  EXPECT_NE(o.err.find("tpufleet: warning: \\x1b]0;x\n"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("first use of lab:8471: pinned its TLS certificate"), std::string::npos);
  std::map<std::string, std::string> env = Env();
  env["TPUFLEET_SERVER"] = "https://lab:8471";
  Output via_env = Tpufleet(app_, {"events", "--server-fingerprint=" + Sha256Fingerprint("cert")},
                            env);
  EXPECT_EQ(server_.argv, std::vector<std::string>{"events"});
  EXPECT_EQ(via_env.out, "NODE  STATE\npod   READY\n");
}

TEST_F(RemoteCommandTest, OtherCommandsSaySoOrStayHere) {
  Output invite = Tpufleet(app_, {"--server", "https://lab:8471", "invite", "milo"}, Env());
  EXPECT_EQ(invite.code, 2);
  EXPECT_EQ(invite.err, "tpufleet: `invite` is not served remotely yet (the team server "
                        "https://lab:8471 runs status, jobs, events, run, logs, cancel, top "
                        "--once, audit, cost, up, down, users and import); run it without "
                        "--server and TPUFLEET_SERVER, on the server's machine\n");
  EXPECT_TRUE(server_.argv.empty());
  Output catalog = Tpufleet(app_, {"--server", "https://lab:8471", "catalog"}, Env());
  EXPECT_EQ(catalog.code, 0) << catalog.err;
  EXPECT_TRUE(server_.argv.empty()) << "catalog needs no fleet state: it runs here";
  Output bad = Tpufleet(app_, {"--server", "lab:8471", "jobs"}, Env());
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err, "tpufleet: --server takes https://HOST:PORT (as `tpufleet serve` logs it), "
                     "not \"lab:8471\"\n");
}

TEST_F(RemoteCommandTest, TheFilesACommandReadsGoWithIt) {
  std::string spec = home_.Write("lab.yaml", "fleet: lab\n");
  std::string key = home_.Write("milo.pub", "ssh-ed25519 AAAA milo\n");
  Tpufleet(app_, {"--server", "https://lab:8471", "users", "add", "milo", "--key", key, "--spec",
                  spec},
           Env());
  EXPECT_EQ(server_.files, (std::map<std::string, std::string>{
                               {spec, "fleet: lab\n"}, {key, "ssh-ed25519 AAAA milo\n"}}));
  Tpufleet(app_, {"--server", "https://lab:8471", "up", spec, "--timeout", "2h"}, Env());
  EXPECT_EQ(server_.argv, (std::vector<std::string>{"up", spec, "--timeout", "2h"}));
  EXPECT_EQ(server_.files.size(), 1u);
  Tpufleet(app_, {"--server", "https://lab:8471", "status"}, Env());
  EXPECT_TRUE(server_.files.empty());
  // A file that cannot be read here: said here, nothing sent.
  server_.argv.clear();
  Output missing = Tpufleet(app_, {"--server", "https://lab:8471", "up", "none.yaml"}, Env());
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(missing.err, "tpufleet: error: none.yaml: No such file or directory\n");
  EXPECT_TRUE(server_.argv.empty());
}

TEST(RunServedCommand, RefusesWhatItDoesNotRun) {
  App app{CliCommands(), nullptr};
  auto served = [&app](const std::vector<std::string>& argv) {
    return cli_testing::Served(app, argv, {{"HOME", cli_testing::kNoHome}},
                               Access::Everything("operator"));
  };
  Output invite = served({"invite", "milo"});
  EXPECT_EQ(invite.code, 2);
  EXPECT_EQ(invite.err, "tpufleet: `invite` is not served remotely yet; this server runs status, "
                        "jobs, events, run, logs, cancel, top --once, audit, cost, up, down, users "
                        "and import\n");
  EXPECT_EQ(served({"status", "--catalog", "/etc/shadow"}).err,
            "tpufleet: --catalog is not sent to a team server\n");
  EXPECT_EQ(served({"jobs", "--watch=j-1"}).code, 2);
  EXPECT_EQ(served({"--server", "https://x:1", "status"}).code, 2);
  // A served command runs as the local one does (here: no world, so its own error).
  Output status = served({"status"});
  EXPECT_EQ(status.code, 1);
  EXPECT_NE(status.err.find("no fleet state"), std::string::npos) << status.err;
}

}  // namespace
}  // namespace tpufleet::cli
