// SshHostsProvider against a real sshd on 127.0.0.1 (ssh/testing/test_sshd.h).
#include "provider/ssh_hosts.h"

#include <gtest/gtest.h>

#include <chrono>

#include "ssh/testing/loopback.h"
#include "ssh/testing/temp_dir.h"
#include "ssh/testing/test_sshd.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/subprocess.h"
#include "util/testing/status_printer.h"

namespace tpufleet {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

NodeSpec SshNode(std::string name, std::vector<std::string> hosts, int port) {
  NodeSpec n;
  n.name = name;
  n.names = {name};
  n.hosts = std::move(hosts);
  n.workers = static_cast<int>(n.hosts.size());
  n.port = port;
  n.ssh_user = "root";
  return n;
}

class SshHostsTest : public TestSshdFixture {
 protected:
  void SetUpWithSshd() override {
    // The user's known_hosts: an ECDSA key first, then the server's ed25519 key, which
    // must be the one chosen.
    known_hosts_ = sshd_->dir() + "/user_known_hosts";
    Result<ProgramResult> gen =
        RunUserCommand({"ssh-keygen", "-q", "-t", "ecdsa", "-N", "", "-f", sshd_->dir() + "/ecdsa"},
                       "", seconds(30));
    ASSERT_TRUE(gen.ok() && gen->exit_code == 0);
    std::vector<std::string> ecdsa =
        Split(std::string(Trim(*ReadFile(sshd_->dir() + "/ecdsa.pub"))), ' ');
    std::string name = "[127.0.0.1]:" + std::to_string(sshd_->port());
    ASSERT_EQ(WriteFileAtomic(known_hosts_,
                              name + " " + ecdsa[0] + " " + ecdsa[1] + "\n" + name + " " +
                                  sshd_->host_key() + "\n",
                              0600),
              Status::Ok());
  }

  std::string known_hosts_;
};

TEST_F(SshHostsTest, ReachableNodeIsReadyWithItsPinnedKey) {
  SshHostsProvider provider({SshNode("lab", {"127.0.0.1", "localhost"}, sshd_->port())},
                            known_hosts_);
  EXPECT_EQ(provider.Name(), "ssh-hosts");
  Result<CloudNode> node = provider.GetNode("", "lab");
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ(node->id, "lab");
  EXPECT_EQ(node->state, NodeState::kReady) << node->health;
  EXPECT_EQ(node->health, "");
  EXPECT_EQ(node->type, "");
  EXPECT_EQ(node->capacity, Capacity::kOnDemand);
  ASSERT_EQ(node->workers.size(), 2u);
  EXPECT_EQ(node->workers[0].index, 0);
  EXPECT_EQ(node->workers[0].address, "127.0.0.1");
  EXPECT_EQ(node->workers[1].index, 1);
  EXPECT_EQ(node->workers[1].address, "localhost");

  Result<std::vector<WorkerIdentity>> ids = provider.GetWorkerIdentities("", "lab");
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  ASSERT_EQ(ids->size(), 2u);
  EXPECT_EQ((*ids)[0].host_key, sshd_->host_key());  // ed25519 preferred over ECDSA
  EXPECT_EQ((*ids)[0].hostname, "127.0.0.1");
  EXPECT_EQ((*ids)[1].host_key, "");  // "localhost" was never pinned
  // Issue 11: what it offers is said, for up to ask the user about.
  EXPECT_EQ((*ids)[1].offered_host_key, sshd_->host_key());
  EXPECT_EQ((*ids)[0].offered_host_key, "");
}

// Issue 11: a hashed known_hosts entry ("ssh -o HashKnownHosts=yes", Debian's default)
// for a host on another port is found as a plain one is.
TEST_F(SshHostsTest, Issue11AHashedEntryForANonStandardPortIsFound) {
  ASSERT_EQ(WriteFileAtomic(known_hosts_, "[127.0.0.1]:" + std::to_string(sshd_->port()) +
                                              " " + sshd_->host_key() + "\n", 0600),
            Status::Ok());
  Result<ProgramResult> hashed =
      RunUserCommand({"ssh-keygen", "-H", "-f", known_hosts_}, "", seconds(30));
  ASSERT_TRUE(hashed.ok() && hashed->exit_code == 0);
  ASSERT_EQ(ReadFile(known_hosts_)->find("127.0.0.1"), std::string::npos) << "not hashed";
  SshHostsProvider provider({SshNode("lab", {"127.0.0.1"}, sshd_->port())}, known_hosts_);
  Result<std::vector<WorkerIdentity>> ids = provider.GetWorkerIdentities("", "lab");
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_EQ((*ids)[0].host_key, sshd_->host_key());
  EXPECT_EQ((*ids)[0].offered_host_key, "");
}

TEST_F(SshHostsTest, UnreachableWorkersAreNamed) {
  SshHostsProvider provider({SshNode("up", {"127.0.0.1"}, sshd_->port()),
                             SshNode("down", {"127.0.0.1"}, ClosedLoopbackPort()),
                             // sshd listens on 127.0.0.1 only, so worker 1 refuses.
                             SshNode("half", {"127.0.0.1", "127.0.0.2"}, sshd_->port())},
                            known_hosts_, seconds(2));
  Result<std::vector<CloudNode>> nodes = provider.ListNodes({"ignored-zone"});
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_EQ(nodes->size(), 3u);
  EXPECT_EQ((*nodes)[0].id, "up");
  EXPECT_EQ((*nodes)[0].state, NodeState::kReady) << (*nodes)[0].health;
  EXPECT_EQ((*nodes)[1].id, "down");
  EXPECT_EQ((*nodes)[1].state, NodeState::kUnreachable);
  EXPECT_TRUE(StartsWith((*nodes)[1].health, "worker 0: ")) << (*nodes)[1].health;
  EXPECT_NE((*nodes)[1].health.find("Connection refused"), std::string::npos);
  EXPECT_EQ((*nodes)[2].state, NodeState::kUnreachable);
  EXPECT_TRUE(StartsWith((*nodes)[2].health, "worker 1: ")) << (*nodes)[2].health;
  EXPECT_EQ((*nodes)[2].health.find("worker 0"), std::string::npos) << (*nodes)[2].health;
}

TEST(SshHosts, ProbesRunConcurrently) {
  LoopbackSocket silent(true);
  std::vector<std::string> hosts(40, "127.0.0.1");
  SshHostsProvider provider({SshNode("many", hosts, silent.port)}, "", milliseconds(300));
  auto start = std::chrono::steady_clock::now();
  Result<CloudNode> node = provider.GetNode("", "many");
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ(node->state, NodeState::kUnreachable);
  EXPECT_EQ(Split(node->health, ';').size(), 40u);
  // One after another would take 40 x 300 ms; two rounds of 32 take about 600 ms.
  EXPECT_LT(took, seconds(3));
}

TEST(SshHosts, NeverCreatesOrDeletes) {
  SshHostsProvider provider({SshNode("lab", {"10.0.0.1"}, 0)});
  CreateNodeRequest create;
  create.node_id = "lab";
  for (const Status& s :
       {provider.CreateNode(create).status(), provider.DeleteNode("", "lab").status(),
        provider.DeleteQueuedResource("", "lab", true).status(),
        provider.SetSshKeys("", "lab", "root:ssh-ed25519 AAAA").status()}) {
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
    EXPECT_NE(s.message().find("never creates or deletes"), std::string::npos);
  }
  Status stop = provider.StopNode("", "lab").status();
  EXPECT_EQ(stop.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(stop.message(), "ssh-hosts nodes are not stopped by tpufleet");
  EXPECT_EQ(provider.GetOperation("op").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(provider.GetNode("", "other").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(provider.GetWorkerIdentities("", "other").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(provider.GetQueuedResource("", "lab").status().code(), StatusCode::kNotFound);
  Result<std::vector<CloudQueuedResource>> queued = provider.ListQueuedResources({"z"});
  ASSERT_TRUE(queued.ok());
  EXPECT_TRUE(queued->empty());
}

TEST(SshHosts, MissingKnownHostsMeansNoKeys) {
  TempDir tmp;
  SshHostsProvider provider({SshNode("lab", {"10.0.0.1"}, 0)}, tmp.path() + "/none");
  Result<std::vector<WorkerIdentity>> ids = provider.GetWorkerIdentities("", "lab");
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  ASSERT_EQ(ids->size(), 1u);
  EXPECT_EQ((*ids)[0].host_key, "");
}

}  // namespace
}  // namespace tpufleet
