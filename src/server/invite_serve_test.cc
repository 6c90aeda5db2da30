// What `tpufleet invite` and `join` rely on from serve: GET /v1/hosts gives a
// collaborator the workers of the nodes they may use, with the address and host key their
// SSH names need (a viewer and someone of no fleet get none; the operator every one), and
// the fingerprint invite reads from serve's certificate file is the one serve presents.
#include <gtest/gtest.h>

#include "api/invite.h"
#include "control/person_tokens.h"
#include "server/http_api.h"
#include "server/tls_identity.h"
#include "util/pem_fingerprint.h"
#include "util/testing/temp_dir.h"
#include "store/sqlite_store.h"
#include "util/testing/fake_clock.h"

namespace tpufleet::server {
namespace {

constexpr const char* kInviteToken = "tpufleet-serve-test-token";

class HostsRouteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = SqliteStore::Open(":memory:").value();
    Node("pod", {{"team", "a"}}, 2, 0);
    Node("solo", {{"team", "b"}}, 1, 2222);
    UserRecord milo;
    milo.fleet = "lab";
    milo.name = "milo";
    milo.keys = {"ssh-ed25519 AAAA"};
    milo.nodes = {"team=a"};
    ASSERT_TRUE(store_->PutUser(milo).ok());
    UserRecord vera = milo;
    vera.name = "vera";
    vera.role = "viewer";
    vera.nodes = {};
    ASSERT_TRUE(store_->PutUser(vera).ok());
    api_ = std::make_unique<ServeApi>(ServeApiContext{kInviteToken, &view_, store_.get(), &clock_});
  }

  void Node(const std::string& name, std::map<std::string, std::string> labels, int workers,
            int port) {
    NodeRecord n;
    n.fleet = "lab";
    n.name = name;
    n.provider = "gcp-tpu";
    n.labels = std::move(labels);
    n.port = port;
    n.state = NodeState::Parse("READY");
    for (int i = 0; i < workers; ++i) {
      WorkerRecord w;
      w.index = i;
      w.address = "198.18.0." + std::to_string(10 * port + i + 1);
      w.host_key = "ssh-ed25519 KEY" + name + std::to_string(i);
      n.workers.push_back(w);
    }
    ASSERT_TRUE(store_->PutNode(n).ok());
  }

  // The hosts GET /v1/hosts gives the holder of `token`, as "NODE/W@ADDRESS:PORT KEY".
  std::vector<std::string> Hosts(const std::string& token, int* status) {
    ApiResponse r = api_->Handle({"GET", "/v1/hosts", {}, {{"authorization", "Bearer " + token}}});
    *status = r.status;
    std::vector<std::string> out;
    Result<std::vector<api::WorkerHost>> hosts = api::ParseWorkerHosts(r.body);
    if (r.status == 200 && hosts.ok()) {
      for (const api::WorkerHost& h : *hosts) {
        out.push_back(h.node + "/" + std::to_string(h.worker) + "@" + h.address + ":" +
                      std::to_string(h.port) + " " + h.host_key);
      }
    }
    return out;
  }

  std::string TokenOf(const std::string& person) {
    return IssuePersonToken(*store_, person, "invite", clock_.Now(), false).value();
  }

  FakeClock clock_;
  std::unique_ptr<SqliteStore> store_;
  PublishedServeView view_;
  std::unique_ptr<ServeApi> api_;
};

TEST_F(HostsRouteTest, AMemberGetsTheWorkersOfTheNodesTheyMayUse) {
  int status = 0;
  EXPECT_EQ(Hosts(TokenOf("milo"), &status),
            (std::vector<std::string>{"pod/0@198.18.0.1:22 ssh-ed25519 KEYpod0",
                                      "pod/1@198.18.0.2:22 ssh-ed25519 KEYpod1"}));
  EXPECT_EQ(status, 200);
}

TEST_F(HostsRouteTest, TheOperatorGetsEveryWorkerWithItsPort) {
  int status = 0;
  std::vector<std::string> all = Hosts(kInviteToken, &status);
  EXPECT_EQ(status, 200);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[2], "solo/0@198.18.0.22221:2222 ssh-ed25519 KEYsolo0");
}

TEST_F(HostsRouteTest, AViewerGetsNoneAndAStrangerIsRefused) {
  int status = 0;
  EXPECT_TRUE(Hosts(TokenOf("vera"), &status).empty());
  EXPECT_EQ(status, 200);
  std::string gone = TokenOf("eve");  // a token of someone on no fleet
  Hosts(gone, &status);
  EXPECT_EQ(status, 401);
}

TEST(InviteFingerprint, IsTheOneServePresents) {
  TempDir dir;
  Result<TlsIdentity> id =
      LoadOrMakeServeIdentity(dir.path(), ServeCertificateNames("127.0.0.1:0", "lab"));
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  Result<std::string> read = PemCertificateFingerprint(id->cert_pem);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, id->fingerprint);
  EXPECT_EQ(PemCertificateFingerprint("not a certificate").status().code(),
            StatusCode::kInvalidArgument);
  std::string broken = id->cert_pem;
  broken.insert(broken.find('\n') + 5, "!");
  EXPECT_EQ(PemCertificateFingerprint(broken).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tpufleet::server
