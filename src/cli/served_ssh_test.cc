// `tpufleet --server URL exec|ssh|cp|forward|attach` as a collaborator meets it on their
// laptop, with a fake team server behind the CLI's transport and a stand-in `ssh` first
// in PATH (a script that says what it was given): a node not in the server's answer is
// "no node", as locally (control.ServerSshFiles tests the config made from it); a
// label selector is refused in one line; exec prints and exits as the local exec does;
// and the config is gone once the command ends.
#include "cli/served_ssh.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <array>

#include "api/invite.h"
#include "api/remote_command.h"
#include "cli/testing/run_cli.h"
#include "control/server_ssh.h"
#include "control/targets.h"
#include "util/file.h"
#include "util/fingerprint.h"
#include "util/http_client.h"
#include "util/testing/temp_dir.h"

namespace tpufleet::cli {
namespace {

using cli_testing::Output;
using cli_testing::Tpufleet;

constexpr const char* kWorkerHostKey =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB69SJ1+y4FfrZCv79wrUAU/rEiOSE8nvmwomH7/5h77";

// pod's two workers, as the server answers milo.
std::vector<api::WorkerHost> PodHosts() {
  std::vector<api::WorkerHost> hosts;
  for (int w : {0, 1}) {
    hosts.push_back({"lab", "pod", w, "198.18.0." + std::to_string(7 + w), 22, kWorkerHostKey});
  }
  return hosts;
}

// A team server over plain http on loopback: GET /v1/hosts gives PodHosts.
class FakeSshServer final : public HttpClient {
 public:
  std::vector<std::string> paths;
  Result<HttpResponse> Send(const HttpRequest& req) override {
    paths.push_back(req.url.substr(req.url.find("/v1/")));
    if (paths.back() == "/v1/hosts") {
      return HttpResponse{200, {}, api::ToJson(PodHosts()), ""};
    }
    return HttpResponse{200, {}, api::ToJson(api::CommandResult{0, "ran\n", ""}), ""};
  }
};

TEST(ServedSsh, OnlyTheAnswersNodesAreTargets) {
  std::vector<NodeRecord> nodes = ServerNodeRecords("milo", PodHosts());
  Result<std::vector<WorkerTarget>> pod = ResolveTargets(nodes, {"pod"});
  ASSERT_TRUE(pod.ok());
  ASSERT_EQ(pod->size(), 2u);
  EXPECT_EQ((*pod)[1].alias, "pod-w1");
  EXPECT_EQ((*pod)[1].login, "milo");
  Result<std::vector<WorkerTarget>> other = ResolveTargets(nodes, {"other"});
  EXPECT_EQ(other.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(other.status().message().rfind("no node 'other'", 0), 0u) << other.status().message();
  EXPECT_EQ(ResolveOneTarget(nodes, "pod:1")->alias, "pod-w1");
  EXPECT_EQ(ResolveOneTarget(nodes, "pod")->alias, "pod-w0");
  EXPECT_TRUE(RefuseLabelSelectors({"pod", "pod:0-1", "all"}).ok());
  EXPECT_EQ(RefuseLabelSelectors({"pod", "team=a"}).code(), StatusCode::kInvalidArgument);
}

class ServedSshTest : public ::testing::Test {
 protected:
  ServedSshTest() {
    app_.server_http = &server_;
    // The stand-in ssh: says its host, its config's User line and the command, and
    // that the config is there while it runs; pod-w1's command "fails" with 3.
    std::string script =
        "#!/bin/sh\n"
        "while [ \"$1\" != -- ]; do [ \"$1\" = -F ] && cfg=$2; shift; done; shift\n"
        "host=$1; shift\n"
        "user=$(sed -n \"/^Host $host\\$/,/^$/p\" \"$cfg\" | grep -o 'User .*')\n"
        "echo \"$host $user\"\n"
        "echo \"$cfg $(grep -c '^Host ' \"$cfg\")\" >>" +
        dir_.path() +
        "/configs\n"
        "echo on-stderr >&2\n"
        "[ \"$host\" = pod-w1 ] && exit 3\n"
        "exit 0\n";
    EXPECT_TRUE(MakeDirs(dir_.path() + "/bin", 0755).ok());
    EXPECT_TRUE(WriteFileAtomic(dir_.path() + "/bin/ssh", script, 0755).ok());
    const char* path = ::getenv("PATH");
    old_path_ = path == nullptr ? "" : path;
    ::setenv("PATH", (dir_.path() + "/bin:" + old_path_).c_str(), 1);
  }
  ~ServedSshTest() override { ::setenv("PATH", old_path_.c_str(), 1); }

  std::map<std::string, std::string> Env() const {
    return {{"HOME", dir_.path()},
            {"TPUFLEET_SERVER", "http://127.0.0.1:8471"},
            {"TPUFLEET_TOKEN", "tpufleet-person-abc"}};
  }

  TempDir dir_;
  FakeSshServer server_;
  App app_{CliCommands(), nullptr};
  std::string old_path_;
};

TEST_F(ServedSshTest, ExecRunsTheirSshOnEveryWorkerAndPrintsAsLocally) {
  Output o = Tpufleet(app_, {"exec", "pod", "--", "whoami"}, Env());
  EXPECT_EQ(o.code, 1) << o.err;  // pod-w1 exited 3
  EXPECT_EQ(server_.paths, std::vector<std::string>{"/v1/hosts"});
  EXPECT_NE(o.out.find("[pod/w0] pod-w0 \n"), std::string::npos) << o.out;  // not joined: no User
  EXPECT_NE(o.out.find("[pod/w1] pod-w1 \n"), std::string::npos) << o.out;
  EXPECT_NE(o.err.find("[pod/w0] on-stderr\n"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("tpufleet: 1 of 2 workers failed:\n  pod/w1: exit 3\n"), std::string::npos)
      << o.err;
  // ssh read the config (its Host blocks) by a path to this process's file in
  // memory, which is gone now: nothing was written to a directory.
  Result<std::string> configs = ReadFile(dir_.path() + "/configs");
  ASSERT_TRUE(configs.ok());
  std::string first = configs->substr(0, configs->find('\n'));
  std::string path = first.substr(0, first.find(' '));
  EXPECT_EQ(path.rfind("/proc/" + std::to_string(::getpid()) + "/fd/", 0), 0u) << first;
  std::string config = RenderSshConfig(DirectServerSshEntries("", PodHosts()), "/k").value();
  size_t hosts = 0;
  for (size_t at = 0; (at = config.find("Host ", at)) != std::string::npos; ++at) {
    hosts += at == 0 || config[at - 1] == '\n';
  }
  EXPECT_EQ(first.substr(first.find(' ') + 1), std::to_string(hosts)) << first;
  std::array<char, 64> link{};
  ssize_t n = ::readlink(path.c_str(), link.data(), link.size() - 1);
  EXPECT_TRUE(n < 0 || std::string(link.data(), n).rfind("/memfd:", 0) != 0) << path << " is left";
}

TEST_F(ServedSshTest, ANodeNotInTheAnswerIsNoNodeAndLabelsAreRefused) {
  Output o = Tpufleet(app_, {"exec", "other", "--", "true"}, Env());
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err.rfind("tpufleet: error: no node 'other'", 0), 0u) << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  o = Tpufleet(app_, {"ssh", "other:0"}, Env());
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err.rfind("tpufleet: error: no node 'other'", 0), 0u) << o.err;
  o = Tpufleet(app_, {"exec", "team=a", "--", "true"}, Env());
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("do not work through a team server"), std::string::npos) << o.err;
  o = Tpufleet(app_, {"forward", "pod:7", "8080"}, Env());
  EXPECT_EQ(o.code, 2) << o.err;
  o = Tpufleet(app_, {"cp", "pod:/x", "other:/y"}, Env());
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_FALSE(ReadFile(dir_.path() + "/configs").ok()) << "no ssh ran";
}

TEST_F(ServedSshTest, SshWaitsForTheirSshAndExitsWithItsStatus) {
  Output o = Tpufleet(app_, {"ssh", "pod:1", "--", "hostname"}, Env());
  EXPECT_EQ(o.code, 3);
  o = Tpufleet(app_, {"ssh", "pod", "--", "hostname"}, Env());
  EXPECT_EQ(o.code, 0);
}

}  // namespace
}  // namespace tpufleet::cli
