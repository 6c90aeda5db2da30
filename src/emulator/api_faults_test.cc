// Every fault kind, injected through the admin endpoint, as a client sees it.
#include <regex>
#include <tuple>

#include "emulator/testing/api_fixture.h"

namespace tpufleet::emulator {
namespace {

class FaultsApiTest : public ApiFixture {
 protected:
  Reply Inject(const Json& fault) { return Post("/emulator/v1/faults", fault); }
  Json SpotBody(const std::string& type = "v4-8") {
    Json b = NodeBody(type);
    b["schedulingConfig"] = {{"spot", true}};
    return b;
  }
};

TEST_F(FaultsApiTest, StockoutFailsTheCreateOperationWithCode8) {
  Reply f = Inject({{"kind", "stockout"}, {"zone", kZone}, {"family", "v4"}});
  ASSERT_EQ(f.status, 200) << f.text;
  EXPECT_EQ(f.json["id"], "fault-1");
  EXPECT_EQ(f.json["kind"], "stockout");
  Reply r = Post(std::string(kParent) + "/nodes?nodeId=n1", NodeBody());
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(Get(NodePath("n1")).json["state"], "CREATING");
  Json op = WaitOperation(r.json["name"]);
  EXPECT_EQ(op["error"]["code"], 8);
  EXPECT_FALSE(op["error"].contains("status"));  // a bare google.rpc.Status
  EXPECT_TRUE(std::regex_match(
      op["error"]["message"].get<std::string>(),
      std::regex("There is no more capacity in the zone \"us-central2-b\"; you can try in "
                 "another zone where Cloud TPU Nodes are offered \\(see "
                 "https://cloud.google.com/tpu/docs/regions\\) \\[EID: 0x[0-9a-f]{15}\\]")));
  EXPECT_EQ(Get(NodePath("n1")).status, 404);
  EXPECT_TRUE(hosts_->CallsStartingWith("Boot").empty());

  // Other families and zones are not affected.
  EXPECT_FALSE(WaitOperation(Post("/v2/projects/p/locations/us-central1-a/nodes?nodeId=x",
                                  NodeBody("v5litepod-8"))
                                 .json["name"])
                   .contains("error"));
  EXPECT_EQ(Delete("/emulator/v1/faults/fault-1").json, Json::object());
  EXPECT_FALSE(CreateNode("n1").contains("error"));
}

TEST_F(FaultsApiTest, StockoutForADurationEndsByItself) {
  Inject({{"kind", "stockout"}, {"zone", kZone}, {"duration", "2s"}});
  EXPECT_EQ(
      WaitOperation(
          Post(std::string(kParent) + "/nodes?nodeId=a", NodeBody()).json["name"])["error"]["code"],
      8);
  Pass(seconds(2));
  EXPECT_TRUE(Get("/emulator/v1/faults").json["faults"].empty());
  EXPECT_FALSE(CreateNode("b").contains("error"));
}

TEST_F(FaultsApiTest, QuotaFaultIsASynchronous429) {
  Inject({{"kind", "quota"}, {"region", "us-central2"}, {"family", "v4"}});
  Reply r = Post(std::string(kParent) + "/nodes?nodeId=n1", SpotBody());
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.json["error"]["code"], 429);
  EXPECT_EQ(r.json["error"]["status"], "RESOURCE_EXHAUSTED");
  EXPECT_EQ(r.json["error"]["message"],
            "Quota limit 'TPUV4PreemptiblePerProjectPerRegionForTPUAPI' has been exceeded. Limit: "
            "0 in region "
            "us-central2.");
  EXPECT_EQ(r.json["error"]["details"][0]["reason"], "RESOURCE_QUOTA_EXCEEDED");
  EXPECT_EQ(Get(NodePath("n1")).status, 404);
  EXPECT_EQ(Delete("/emulator/v1/faults").json, (Json{{"cleared", 1}}));
  EXPECT_EQ(Post(std::string(kParent) + "/nodes?nodeId=n1", SpotBody()).status, 200);
}

TEST_F(FaultsApiTest, StormFailsAFixedShareOfCallsForAGivenSeed) {
  auto run = [&](uint64_t seed) {
    Reset(EmulatorConfig());
    Inject({{"kind", "storm"},
            {"rate", 0.5},
            {"httpCodes", {429, 500, 503}},
            {"seed", seed},
            {"duration", "10s"}});
    std::vector<int> statuses;
    for (int i = 0; i < 40; ++i) {
      statuses.push_back(Get(std::string(kParent) + "/nodes").status);
    }
    return statuses;
  };
  std::vector<int> a = run(7);
  EXPECT_EQ(a, run(7));
  EXPECT_NE(a, run(8));
  int failed = 0;
  std::set<int> codes;
  for (int s : a) {
    if (s != 200) {
      ++failed;
      codes.insert(s);
    }
  }
  EXPECT_GT(failed, 8);
  EXPECT_LT(failed, 32);
  EXPECT_EQ(codes, (std::set<int>{429, 500, 503}));

  // Storm errors use Google's envelope; admin calls are never hit; the storm ends.
  Reset(EmulatorConfig());
  Inject({{"kind", "storm"}, {"rate", 1.0}, {"httpCodes", {503}}, {"duration", "1s"}});
  Reply r = Get(std::string(kParent) + "/nodes");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.json["error"]["status"], "UNAVAILABLE");
  EXPECT_EQ(Get("/emulator/v1/status").status, 200);
  clock_.Advance(seconds(1));
  EXPECT_EQ(Get(std::string(kParent) + "/nodes").status, 200);
}

TEST_F(FaultsApiTest, StormCanUseAnyHttpError) {
  Inject({{"kind", "storm"}, {"rate", 1.0}, {"httpCodes", {429}}});
  Reply r = Post(std::string(kParent) + "/nodes?nodeId=n1", NodeBody());
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.json["error"]["details"][0]["reason"], "RATE_LIMIT_EXCEEDED");
  Delete("/emulator/v1/faults");
  Inject({{"kind", "storm"}, {"rate", 1.0}, {"httpCodes", {502}}});
  r = Get(std::string(kParent) + "/nodes");
  EXPECT_EQ(r.status, 502);
  EXPECT_EQ(r.json["error"]["code"], 502);
}

// Issue 14: a credential that lost its role mid-run. Every API call gets 403
// PERMISSION_DENIED naming the permission, as the TPU API words it, until the fault
// ends; the admin routes still answer, so it can be cleared.
TEST_F(FaultsApiTest, DeniedIsA403NamingThePermissionUntilItEnds) {
  CreateNode("kept");
  Pass(seconds(5));
  Inject({{"kind", "denied"}, {"duration", "30s"}});
  Reply list = Get(std::string(kParent) + "/nodes");
  EXPECT_EQ(list.status, 403) << list.text;
  EXPECT_EQ(list.json["error"]["status"], "PERMISSION_DENIED");
  EXPECT_EQ(list.json["error"]["message"],
            "Permission 'tpu.nodes.list' denied on '" + std::string(kParent).substr(4) + "/nodes'");
  EXPECT_EQ(list.json["error"]["details"][0]["reason"], "IAM_PERMISSION_DENIED");
  EXPECT_EQ(list.json["error"]["details"][0]["metadata"]["permission"], "tpu.nodes.list");
  for (const auto& [method, path, permission] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"GET", NodePath("kept"), "tpu.nodes.get"},
           {"DELETE", NodePath("kept"), "tpu.nodes.delete"},
           {"POST", NodePath("kept") + ":stop", "tpu.nodes.stop"},
           {"POST", std::string(kParent) + "/nodes?nodeId=n2", "tpu.nodes.create"},
           {"GET", std::string(kParent) + "/queuedResources", "tpu.queuedResources.list"}}) {
    Reply r = Send(method, path, method == "POST" ? NodeBody().dump() : "");
    EXPECT_EQ(r.status, 403) << method << " " << path << ": " << r.text;
    EXPECT_EQ(r.json["error"]["details"][0]["metadata"]["permission"], permission) << r.text;
  }
  EXPECT_EQ(Get("/emulator/v1/status").status, 200);
  clock_.Advance(seconds(30));
  Reply node = Get(NodePath("kept"));
  EXPECT_EQ(node.status, 200) << "nothing was deleted while denied: " << node.text;
  EXPECT_EQ(node.json["state"], "READY");
}

TEST_F(FaultsApiTest, PreemptionGivesNoticeThenHaltsAndTheNodeKeepsItsQuota) {
  EmulatorConfig config;
  config.quota.push_back({"us-central2", "v4", QuotaTier::kAny, 4});
  Reset(config);
  CreateNode("n1", SpotBody());
  hosts_->ClearCalls();
  Reply f = Inject({{"kind", "preempt"}, {"node", NodeName("n1")}, {"notice", "2s"}});
  ASSERT_EQ(f.status, 200) << f.text;
  RunHostWork();
  EXPECT_EQ(hosts_->calls(),
            (std::vector<std::string>{"Notify " + NodeName("n1") + " preemption"}));
  Pass(milliseconds(1500));
  EXPECT_EQ(Get(NodePath("n1")).json["state"], "READY");
  Pass(milliseconds(600));
  Json node = Get(NodePath("n1")).json;
  EXPECT_EQ(node["state"], "PREEMPTED");
  EXPECT_FALSE(node.contains("health"));
  EXPECT_EQ(hosts_->CallsStartingWith("Halt " + NodeName("n1")).size(), 1u);
  EXPECT_TRUE(Get("/emulator/v1/faults").json["faults"].empty());

  // A preempted node cannot be started or updated, and still holds quota.
  EXPECT_EQ(Post(NodePath("n1") + ":start").status, 400);
  Reply patch = Patch(NodePath("n1") + "?updateMask=labels", Json{{"labels", {{"a", "b"}}}});
  EXPECT_EQ(patch.status, 400);
  EXPECT_NE(patch.json["error"]["message"].get<std::string>().find(
                "Cloud TPU received a bad request. update is not supported while in state "
                "PREEMPTED [EID: 0x"),
            std::string::npos);
  EXPECT_EQ(Post(std::string(kParent) + "/nodes?nodeId=n2", SpotBody()).status, 429);
  WaitOperation(Delete(NodePath("n1")).json["name"]);
  EXPECT_EQ(Post(std::string(kParent) + "/nodes?nodeId=n2", SpotBody()).status, 200);
}

TEST_F(FaultsApiTest, OnlySpotNodesThatAreReadyArePreempted) {
  CreateNode("od");
  Reply r = Inject({{"kind", "preempt"}, {"node", NodeName("od")}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json["error"]["status"], "FAILED_PRECONDITION");
  EXPECT_EQ(Inject({{"kind", "preempt"}, {"node", NodeName("nope")}}).status, 404);
  Post(std::string(kParent) + "/nodes?nodeId=creating", SpotBody());
  EXPECT_EQ(Inject({{"kind", "preempt"}, {"node", NodeName("creating")}}).status, 400);
}

TEST_F(FaultsApiTest, PreemptionCalledOffBeforeItHappens) {
  CreateNode("n1", SpotBody());
  Reply f = Inject({{"kind", "preempt"}, {"node", NodeName("n1")}, {"notice", "5s"}});
  EXPECT_EQ(Delete("/emulator/v1/faults/" + f.json["id"].get<std::string>()).status, 200);
  Pass(seconds(6));
  EXPECT_EQ(Get(NodePath("n1")).json["state"], "READY");
}

TEST_F(FaultsApiTest, MaintenanceRebootsWorkersWithNewAddresses) {
  CreateNode("n1", NodeBody("v4-16"));
  Json before = Get(NodePath("n1")).json["networkEndpoints"];
  hosts_->ClearCalls();
  ASSERT_EQ(Inject({{"kind", "maintenance"}, {"node", NodeName("n1")}, {"notice", "2s"}}).status,
            200);
  RunHostWork();
  EXPECT_EQ(hosts_->calls(),
            (std::vector<std::string>{"Notify " + NodeName("n1") + " maintenance"}));
  Json node = Get(NodePath("n1")).json;
  EXPECT_EQ(node["upcomingMaintenance"]["maintenanceStatus"], "PENDING");
  EXPECT_EQ(node["upcomingMaintenance"]["type"], "UNSCHEDULED");
  EXPECT_TRUE(node["upcomingMaintenance"]["windowStartTime"].is_string());
  EXPECT_EQ(node["health"], "HEALTHY");

  clock_.Advance(seconds(2));
  node = Get(NodePath("n1")).json;  // not yet run: Halt and Boot are queued
  EXPECT_EQ(node["state"], "READY");
  EXPECT_EQ(node["health"], "UNHEALTHY_MAINTENANCE");
  EXPECT_EQ(node["upcomingMaintenance"]["maintenanceStatus"], "ONGOING");
  Pass(seconds(2));
  node = Get(NodePath("n1")).json;
  EXPECT_EQ(node["health"], "HEALTHY");
  EXPECT_FALSE(node.contains("upcomingMaintenance"));
  EXPECT_EQ(node["networkEndpoints"].size(), 2u);
  EXPECT_NE(node["networkEndpoints"], before);
  EXPECT_EQ(hosts_->CallsStartingWith("Halt").size(), 1u);
  EXPECT_EQ(hosts_->CallsStartingWith("Boot " + NodeName("n1") + " new_addresses=1").size(), 1u);
  EXPECT_TRUE(Get("/emulator/v1/faults").json["faults"].empty());
}

TEST_F(FaultsApiTest, CutOffWorkerIsReconnectedWhenTheFaultEnds) {
  CreateNode("pod", NodeBody("v4-32"));
  hosts_->ClearCalls();
  Reply f =
      Inject({{"kind", "cutoff"}, {"node", NodeName("pod")}, {"worker", 1}, {"duration", "3s"}});
  ASSERT_EQ(f.status, 200) << f.text;
  RunHostWork();
  EXPECT_EQ(hosts_->calls(),
            (std::vector<std::string>{"SetCutOff " + NodeName("pod") + " worker=1 cut=1"}));
  EXPECT_EQ(Get("/emulator/v1/status").json["nodes"][0]["workers"][1]["cutOff"], true);
  Pass(seconds(3));
  EXPECT_EQ(hosts_->CallsStartingWith("SetCutOff " + NodeName("pod") + " worker=1 cut=0").size(),
            1u);
  EXPECT_EQ(Get("/emulator/v1/status").json["nodes"][0]["workers"][1]["cutOff"], false);
  EXPECT_EQ(Inject({{"kind", "cutoff"}, {"node", NodeName("pod")}, {"worker", 4}}).status, 400);
}

TEST_F(FaultsApiTest, ADeviceComesBackWhenTheLastFaultOnItEnds) {
  CreateNode("pod", NodeBody("v4-32"));
  hosts_->ClearCalls();
  auto workers = [&] { return Get("/emulator/v1/status").json["nodes"][0]["workers"]; };
  EXPECT_EQ(workers()[1]["devices"], 4);
  Reply f = Inject({{"kind", "device"}, {"node", NodeName("pod")}, {"worker", 1}, {"device", 3}});
  ASSERT_EQ(f.status, 200) << f.text;
  EXPECT_EQ(f.json["device"], 3);
  Reply twice = Inject({{"kind", "device"}, {"node", NodeName("pod")}, {"worker", 1},
                        {"device", 3}, {"duration", "3s"}});
  ASSERT_EQ(twice.status, 200) << twice.text;
  RunHostWork();
  std::string removed = "SetDeviceRemoved " + NodeName("pod") + " worker=1 device=3 removed=";
  EXPECT_EQ(hosts_->CallsStartingWith(removed + "1").size(), 2u);
  EXPECT_EQ(workers()[1]["devices"], 3);
  EXPECT_EQ(workers()[0]["devices"], 4);
  Pass(seconds(3));  // the timed one ends; the other still holds the chip away
  EXPECT_TRUE(hosts_->CallsStartingWith(removed + "0").empty());
  EXPECT_EQ(workers()[1]["devices"], 3);
  ASSERT_EQ(Delete("/emulator/v1/faults/" + f.json["id"].get<std::string>()).status, 200);
  RunHostWork();
  EXPECT_EQ(hosts_->CallsStartingWith(removed + "0").size(), 1u);
  EXPECT_EQ(workers()[1]["devices"], 4);
  // A v4 worker has chips 0 to 3.
  Reply bad = Inject({{"kind", "device"}, {"node", NodeName("pod")}, {"worker", 0}, {"device", 4}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.text.find("have devices 0 to 3, not 4"), std::string::npos) << bad.text;
}

TEST_F(FaultsApiTest, SlowMultipliesOperationTimes) {
  Inject({{"kind", "slow"}, {"factor", 10}});
  Reply r = Post(std::string(kParent) + "/nodes?nodeId=n1", NodeBody());
  Pass(seconds(5));
  EXPECT_EQ(Get(NodePath("n1")).json["state"], "CREATING");
  Pass(seconds(5));
  EXPECT_EQ(Get(NodePath("n1")).json["state"], "READY");
}

TEST_F(FaultsApiTest, AdminRejectsBadFaults) {
  EXPECT_EQ(Inject({{"kind", "meteor"}}).status, 400);
  EXPECT_EQ(Inject({{"kind", "stockout"}}).status, 400);
  EXPECT_EQ(Inject({{"kind", "stockout"}, {"zone", "us-nowhere-z"}}).status, 400);
  EXPECT_EQ(Inject({{"kind", "stockout"}, {"zone", kZone}, {"family", "v9"}}).status, 400);
  EXPECT_EQ(Inject({{"kind", "quota"}, {"region", "mars"}}).status, 400);
  EXPECT_EQ(Inject({{"kind", "storm"}, {"rate", 2}}).status, 400);
  EXPECT_EQ(Send("POST", "/emulator/v1/faults", "nope").status, 400);
  EXPECT_EQ(Delete("/emulator/v1/faults/fault-99").status, 404);
  EXPECT_EQ(Get("/emulator/v1/faults/fault-99").status, 404);
  Reply ok = Inject({{"kind", "slow"}, {"factor", 2}, {"duration", "1m"}});
  EXPECT_EQ(Get("/emulator/v1/faults/" + ok.json["id"].get<std::string>()).json["duration"], "60s");
  EXPECT_EQ(Get("/emulator/v1/faults").json["faults"].size(), 1u);
}

}  // namespace
}  // namespace tpufleet::emulator
