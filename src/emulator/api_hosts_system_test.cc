// System tests of what `tpufleet serve` relies on (issue 14), through the emulator as
// its daemon runs it: the ApiServer behind its HttpServer threads (ticker, host work) on
// real worker hosts, the faults posted as `tpufleet emulator inject` posts them.
//   - preempt --notice 3s: every worker's parked `instance/preempted` long-poll answers
//     TRUE at once, while the API says READY until the notice ends, then PREEMPTED;
//   - maintenance: `instance/maintenance-event` answers TERMINATE_ON_HOST_MAINTENANCE at
//     once, then the workers come back on new addresses with their disks;
//   - a node deleted through the API (behind tpufleet's back) is gone from the list,
//     its workers with it, while the bucket at /gcs keeps what they wrote.
// Real namespaces, sshd and curl, as root (skipped otherwise); see
// hosts/namespace_hosts_fixture.h.
#include <future>

#include <nlohmann/json.hpp>

#include "core/catalog.h"
#include "emulator/api_server.h"
#include "emulator/config.h"
#include "emulator/hosts/namespace_hosts_fixture.h"
#include "emulator/http_server.h"

namespace tpufleet::emulator::hosts_test {
namespace {

using Json = nlohmann::json;

constexpr const char* kToken = "owner-secret-for-system-tests";
constexpr const char* kParent = "/v2/projects/p/locations/us-central2-b";
// How long a node may take to become READY, or to finish maintenance, on a busy machine.
constexpr seconds kSettleTimeout{60};
// "At once": a notice reaches every worker well within the shortest notice used here.
constexpr milliseconds kNoticeLatency{1500};

class ApiOnHostsTest : public NamespaceHostsTest {
 protected:
  void SetUp() override {
    NamespaceHostsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) {
      return;
    }
    Result<Catalog> catalog = ParseCatalog(BuiltinCatalogYaml(), "built-in catalog");
    ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
    EmulatorConfig config;
    config.auth.owner_token = kToken;
    api_ = std::make_unique<ApiServer>(config, clock_, hosts_.get(), *catalog);
    http_ = std::make_unique<HttpServer>(api_.get(), HttpServerOptions{});
    Result<int> port = http_->Start();
    ASSERT_TRUE(port.ok()) << port.status().ToString();
  }

  void TearDown() override {
    if (http_ != nullptr) {
      http_->Stop();  // destroys every node's workers, as the daemon's end does
    }
    http_.reset();
    api_.reset();
    NamespaceHostsTest::TearDown();
  }

  struct Reply {
    int status = 0;
    Json json;
  };

  Reply Call(const std::string& method, const std::string& path, const Json& body = nullptr,
             std::map<std::string, std::string> query = {}) {
    HttpRequest req;
    req.method = method;
    req.path = path;
    req.query.insert(query.begin(), query.end());
    req.headers = {{"authorization", std::string("Bearer ") + kToken}};
    if (!body.is_null()) {
      req.body = body.dump();
    }
    HttpResponse resp = api_->Handle(req);
    return {resp.status, Json::parse(resp.body, nullptr, false)};
  }

  static std::string NodePath(const std::string& id) {
    return std::string(kParent) + "/nodes/" + id;
  }

  // Polls GET of the node until `done(node)` or kSettleTimeout; the last reply's JSON.
  template <typename Done>
  Json WaitNode(const std::string& id, Done done) {
    auto deadline = std::chrono::steady_clock::now() + kSettleTimeout;
    Json node;
    do {
      node = Call("GET", NodePath(id)).json;
      if (done(node)) {
        break;
      }
      std::this_thread::sleep_for(milliseconds(50));
    } while (std::chrono::steady_clock::now() < deadline);
    return node;
  }

  // Creates node `id` (kNode's name for id "t1") of `type` with alice's key; its READY
  // body.
  Json CreateReady(const std::string& id, const std::string& type, bool spot) {
    Json body = {{"acceleratorType", type},
                 {"runtimeVersion", "tpu-ubuntu2204-base"},
                 {"schedulingConfig", {{"spot", spot}}},
                 {"metadata", {{"ssh-keys", KeyLine("alice")}}}};
    Reply r = Call("POST", std::string(kParent) + "/nodes", body, {{"nodeId", id}});
    EXPECT_EQ(r.status, 200) << r.json.dump();
    return WaitNode(id, [](const Json& n) { return n.value("state", "") == "READY"; });
  }

  static std::vector<std::string> Addresses(const Json& node) {
    std::vector<std::string> out;
    for (const Json& e : node.value("networkEndpoints", Json::array())) {
      out.push_back(e.value("ipAddress", ""));
    }
    return out;
  }

  // Parks a `wait_for_change` long-poll of `path` on every worker of kNode (curl in each
  // worker's network) and returns once they are all waiting: none has answered yet.
  std::vector<std::future<ProgramResult>> ParkLongPolls(const std::string& path) {
    std::vector<std::future<ProgramResult>> polls;
    for (pid_t init : hosts_->InitPids(kNode)) {
      polls.push_back(std::async(std::launch::async, [this, init, path] {
        return Curl(init, path + "?wait_for_change=true&timeout_sec=60", true, 60);
      }));
    }
    for (auto& p : polls) {
      EXPECT_EQ(p.wait_for(milliseconds(700)), std::future_status::timeout)
          << "a long-poll answered before anything changed";
    }
    return polls;
  }

  // Injects `fault` as `tpufleet emulator inject` does, with `polls` parked, and checks
  // that each answers `answer` within kNoticeLatency. The time of the injection.
  std::chrono::steady_clock::time_point InjectWhileParked(
      const Json& fault, std::vector<std::future<ProgramResult>>& polls,
      const std::string& answer) {
    auto injected = std::chrono::steady_clock::now();
    Reply r = Call("POST", "/emulator/v1/faults", fault);
    EXPECT_EQ(r.status, 200) << r.json.dump();
    for (size_t i = 0; i < polls.size(); ++i) {
      if (polls[i].wait_until(injected + kNoticeLatency) != std::future_status::ready) {
        ADD_FAILURE() << "worker " << i << "'s long-poll did not answer at once";
        continue;
      }
      EXPECT_EQ(Body(polls[i].get()), answer) << "worker " << i;
    }
    return injected;
  }

  // Runs `shell` as the machine's root in the mount namespace of the worker `init`.
  Result<ProgramResult> InWorkerMounts(pid_t init, const std::string& shell) {
    return RunCommand(
        {nsenter_, "--target", std::to_string(init), "--mount", "--", "/bin/sh", "-c", shell});
  }

  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<HttpServer> http_;
};

TEST_F(ApiOnHostsTest, APreemptionNoticeAnswersEveryWorkersLongPollWhileTheApiSaysReady) {
  Json node = CreateReady("t1", "v4-32", /*spot=*/true);
  ASSERT_EQ(node.value("state", ""), "READY") << node.dump();
  ASSERT_EQ(Addresses(node).size(), 4u);
  std::vector<std::future<ProgramResult>> polls = ParkLongPolls("instance/preempted");
  auto injected =
      InjectWhileParked({{"kind", "preempt"}, {"node", kNode}, {"notice", "3s"}}, polls, "TRUE");
  // The notice is the only sign yet: the API shows the node READY until it ends.
  EXPECT_EQ(Call("GET", NodePath("t1")).json.value("state", ""), "READY");
  node = WaitNode("t1", [](const Json& n) { return n.value("state", "") == "PREEMPTED"; });
  EXPECT_EQ(node.value("state", ""), "PREEMPTED");
  EXPECT_GE(std::chrono::steady_clock::now() - injected, seconds(3))
      << "PREEMPTED before the notice ended";
  // Then the workers power off (their halt is queued as the state turns).
  EXPECT_TRUE(Eventually([&] {
    std::vector<pid_t> pids = hosts_->InitPids(kNode);
    return std::all_of(pids.begin(), pids.end(), [](pid_t p) { return p == -1; });
  })) << "a worker of the preempted node still runs";
}

TEST_F(ApiOnHostsTest, MaintenanceGivesItsNoticeThenMovesTheWorkersToNewAddresses) {
  Json node = CreateReady("t1", "v4-16", /*spot=*/false);
  std::vector<std::string> before = Addresses(node);
  ASSERT_EQ(before.size(), 2u) << node.dump();
  std::vector<pid_t> inits = hosts_->InitPids(kNode);
  // Something on each worker's disk, to find again after the reboot.
  for (pid_t init : inits) {
    ASSERT_TRUE(InWorkerMounts(init, "echo kept > /root/kept").ok());
  }
  std::vector<std::future<ProgramResult>> polls = ParkLongPolls("instance/maintenance-event");
  InjectWhileParked({{"kind", "maintenance"}, {"node", kNode}, {"notice", "2s"}}, polls,
                    "TERMINATE_ON_HOST_MAINTENANCE");
  node = Call("GET", NodePath("t1")).json;
  EXPECT_EQ(node.value("health", ""), "HEALTHY");
  EXPECT_EQ(node["upcomingMaintenance"].value("maintenanceStatus", ""), "PENDING");
  node = WaitNode("t1", [](const Json& n) {
    return n.value("health", "") == "HEALTHY" && !n.contains("upcomingMaintenance") &&
           n.value("state", "") == "READY";
  });
  ASSERT_FALSE(node.contains("upcomingMaintenance")) << node.dump();
  std::vector<std::string> after = Addresses(node);
  ASSERT_EQ(after.size(), 2u);
  std::vector<pid_t> rebooted = hosts_->InitPids(kNode);
  ASSERT_EQ(rebooted.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_NE(after[i], before[i]) << "worker " << i << " kept its address";
    EXPECT_NE(rebooted[i], inits[i]) << "worker " << i << " was not rebooted";
    // The worker itself knows its new address, its notice is over, its disk is kept.
    EXPECT_EQ(Body(Curl(rebooted[i], "instance/network-interfaces/0/ip")), after[i]);
    EXPECT_EQ(Body(Curl(rebooted[i], "instance/maintenance-event")), "NONE");
    Result<ProgramResult> kept = InWorkerMounts(rebooted[i], "cat /root/kept");
    ASSERT_TRUE(kept.ok());
    EXPECT_EQ(kept->output, "kept\n") << "worker " << i;
  }
}

TEST_F(ApiOnHostsTest, ANodeDeletedBehindTheFleetsBackIsGoneWithItsWorkersButNotTheBucket) {
  Json node = CreateReady("t1", "v4-8", /*spot=*/false);
  ASSERT_EQ(node.value("state", ""), "READY") << node.dump();
  pid_t init = hosts_->InitPids(kNode).at(0);
  ASSERT_TRUE(InWorkerMounts(init, "echo step > /gcs/ckpt").ok());
  Reply del = Call("DELETE", NodePath("t1"));
  ASSERT_EQ(del.status, 200) << del.json.dump();
  node = WaitNode("t1", [](const Json& n) { return n.contains("error"); });
  EXPECT_EQ(node["error"].value("code", 0), 404) << node.dump();
  Reply list = Call("GET", std::string(kParent) + "/nodes");
  EXPECT_EQ(list.status, 200);
  EXPECT_TRUE(list.json.value("nodes", Json::array()).empty()) << list.json.dump();
  EXPECT_TRUE(Eventually([&] { return !Alive(init); })) << "the deleted node's worker still runs";
  EXPECT_EQ(Must(ReadFile(bucket_ + "/ckpt")), "step\n");
}

}  // namespace
}  // namespace tpufleet::emulator::hosts_test
