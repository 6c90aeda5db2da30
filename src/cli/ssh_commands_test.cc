// `ssh` and `forward` in-process: what they refuse, and how, before any ssh runs. (A test
// here must never get as far as a valid login: `ssh` would replace the test process.)
// Both commands against a real sshd, through the binary: src/app/ssh_commands_test.cc.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "cli/fleet_world.h"
#include "cli/testing/lab_node.h"
#include "cli/testing/lent_world.h"
#include "cli/testing/run_cli.h"
#include "control/ssh_sync.h"
#include "control/testing/test_world.h"
#include "util/unique_fd.h"

namespace tpufleet::cli {
namespace {

using cli_testing::Contains;
using cli_testing::Output;
using cli_testing::Tpufleet;

// A loopback port nothing listens on (the kernel's pick, released again).
int FreePort() {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len), 0);
  return ntohs(a.sin_port);
}

// Fleet "lab": pod (4 workers, team=a), eval (1 worker, team=a), and new (still CREATING),
// with their SSH files written.
class SshCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Put("pod", 4);
    Put("eval", 1);
    Put("new", 0).state = NodeState::kCreating;
    for (const NodeRecord& r : records_) {
      ASSERT_EQ(t_.store->PutNode(r), Status::Ok());
    }
    ASSERT_EQ(SyncSshFiles(t_.world), Status::Ok());
  }

  NodeRecord& Put(const std::string& name, int workers) {
    NodeRecord r = cli_testing::ReadyLabNode(name, workers, static_cast<int>(records_.size()));
    r.labels = {{"team", "a"}};
    records_.push_back(std::move(r));
    return records_.back();
  }

  // Expects exit 2 (usage) and `message` on stderr.
  void Usage(const std::vector<std::string>& argv, const std::string& message) {
    Output o = Tpufleet(app_, argv);
    EXPECT_EQ(o.code, 2) << Join(argv, " ") << "\n" << o.err;
    EXPECT_TRUE(Contains(o.err, message)) << Join(argv, " ") << "\n" << o.err;
  }

  testing::TestWorld t_;
  std::vector<NodeRecord> records_;
  int opened_ = 0;  // how often a command reached for the world
  App app_ = cli_testing::AppLending(t_.world, &opened_);
};

TEST_F(SshCommandsTest, SshNeedsOneWorkerAndTheCommandAfterDashDash) {
  Usage({"ssh"}, "ssh takes one worker");
  Usage({"ssh", "pod", "hostname"}, "tpufleet ssh NODE[:N] [-- COMMAND...]");
  Usage({"ssh", "--", "pod"}, "ssh takes one worker");
  Usage({"ssh", "pod", "--json"}, "'ssh' prints no data");
  EXPECT_EQ(opened_, 0);
  Usage({"ssh", "pod:0-1"}, "'pod:0-1' names 2 workers; pick one with NODE:N, e.g. pod:0");
  Usage({"ssh", "team=a"}, "'team=a' names 5 workers; pick one with NODE:N, e.g. eval:0");
  Usage({"ssh", "all", "--", "hostname"}, "names 5 workers");
  Usage({"ssh", "pod:7"}, "node 'pod' has workers 0-3; 'pod:7' names none");
  Usage({"ssh", "pod:3-1"}, "runs backwards");
  Usage({"ssh", "pod:x"}, "expected NODE:N, NODE:N-M");
}

TEST_F(SshCommandsTest, TargetsTheStateCannotServeAreFailures) {
  Output unknown = Tpufleet(app_, {"ssh", "podd"});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_TRUE(Contains(unknown.err, "no node 'podd' in tpufleet's state; did you mean 'pod'?"))
      << unknown.err;
  Output creating = Tpufleet(app_, {"forward", "new", "8888"});
  EXPECT_EQ(creating.code, 1);
  EXPECT_TRUE(Contains(creating.err, "node 'new' has no workers yet (state CREATING)"))
      << creating.err;

  t_.ssh_files.Remove();
  Output no_config = Tpufleet(app_, {"ssh", "pod:1"});
  EXPECT_EQ(no_config.code, 1);
  EXPECT_TRUE(Contains(no_config.err, "`tpufleet up` writes it")) << no_config.err;
}

TEST_F(SshCommandsTest, ForwardChecksItsPortsBeforeAnythingElse) {
  Usage({"forward", "pod"}, "tpufleet forward NODE[:N] PORT[:LOCAL]");
  Usage({"forward", "pod", "8888", "9999"}, "tpufleet forward NODE[:N] PORT[:LOCAL]");
  for (const char* ports :
       {"0", "65536", "http", "8888:", ":8888", "8888:0", "1:2:3", "8o88", "8888:x", " 8888"}) {
    Usage({"forward", "pod", ports}, std::string("expected PORT or PORT:LOCAL, ports 1-65535, "
                                                 "got '") +
                                         ports + "'");
  }
  EXPECT_EQ(opened_, 0);
  Usage({"forward", "pod:1-2", "8888"}, "'pod:1-2' names 2 workers");
}

TEST_F(SshCommandsTest, ForwardToALocalPortInUseSaysSo) {
  UniqueFd busy(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(busy.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(busy.get(), 1), 0);
  ASSERT_EQ(::getsockname(busy.get(), reinterpret_cast<sockaddr*>(&a), &len), 0);
  std::string port = std::to_string(ntohs(a.sin_port));

  Output o = Tpufleet(app_, {"forward", "pod", "8888:" + port});

  EXPECT_EQ(o.code, 1);
  EXPECT_TRUE(Contains(o.err, "127.0.0.1:" + port + " is in use; pick another local port"))
      << o.err;
}

TEST_F(SshCommandsTest, StatusJsonShowsTheLabelsSelectorsMatch) {
  nlohmann::json j = cli_testing::TpufleetJson(app_, {"status"});
  ASSERT_EQ(j["nodes"].size(), 3u) << j.dump();
  EXPECT_EQ(j["nodes"][0]["labels"], (nlohmann::json{{"team", "a"}})) << j.dump();
}

TEST_F(SshCommandsTest, BothAreInTheHelp) {
  Output help = Tpufleet(app_, {"help"});
  EXPECT_TRUE(Contains(help.out, "  ssh ")) << help.out;
  EXPECT_TRUE(Contains(help.out, "  forward ")) << help.out;
  Output forward = Tpufleet(app_, {"forward", "--help"});
  EXPECT_EQ(forward.code, 0);
  EXPECT_TRUE(Contains(forward.out, "Usage: tpufleet forward NODE[:N] PORT[:LOCAL]"))
      << forward.out;
  EXPECT_TRUE(
      Contains(Tpufleet(app_, {"help", "ssh"}).out, "Usage: tpufleet ssh NODE[:N] [-- COMMAND"));
  EXPECT_EQ(opened_, 0);
}

// ssh runs `tpufleet ssh-proxy --state-dir DIR -- NODE N` (the config's ProxyCommand):
// not a command for people, so not in the help, and its words are checked before any
// state is opened.
TEST_F(SshCommandsTest, Issue11SshProxyIsHiddenAndChecksItsWords) {
  EXPECT_FALSE(Contains(Tpufleet({"help"}).out, "ssh-proxy"));
  EXPECT_EQ(Tpufleet({"ssh-proxy", "--help"}).code, 0);
  for (std::vector<std::string> bad :
       std::vector<std::vector<std::string>>{{"ssh-proxy", "--", "-oProxyCommand=touch x", "0"},
                                             {"ssh-proxy", "--", "pod", "0;id"},
                                             {"ssh-proxy", "--", "pod"},
                                             {"ssh-proxy", "--", "pod", "0", "extra"}}) {
    Output o = Tpufleet(bad);
    EXPECT_EQ(o.code, 2) << bad[2];
    EXPECT_TRUE(o.out.empty()) << "stdout is the connection's: " << o.out;
  }
  EXPECT_EQ(opened_, 0);
}

// The forward through the World's forwarder (here one that plays a script, no ssh): when
// its connection drops it is started again, with the same command line, and says so.
TEST_F(SshCommandsTest, Issue11ADroppedForwardIsStartedAgainThroughTheWorld) {
  using Event = Forward::Event;
  t_.forwarder.Add({{Event::kListening, Event::kExited},
                    "ssh exited with status 255: Connection closed by 198.18.0.2 port 22",
                    ""});
  t_.forwarder.Add({{Event::kListening}, "", ""});  // then stopped (Ctrl-C)

  Output o = Tpufleet(app_, {"forward", "pod:1", "8888:" + std::to_string(FreePort())});

  EXPECT_EQ(o.code, 0) << o.err;
  ASSERT_EQ(t_.forwarder.started().size(), 2u);
  EXPECT_EQ(t_.forwarder.started()[1].argv, t_.forwarder.started()[0].argv);
  EXPECT_TRUE(Contains(o.err, "the forward to pod/w1 dropped (ssh exited with status 255"))
      << o.err;
  EXPECT_TRUE(Contains(o.err, "the forward to pod/w1 is back")) << o.err;
  EXPECT_TRUE(Contains(o.out, "Forwarding http://127.0.0.1:")) << o.out;
}

}  // namespace
}  // namespace tpufleet::cli
