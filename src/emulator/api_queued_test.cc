#include "emulator/testing/api_fixture.h"

namespace tpufleet::emulator {
namespace {

class QueuedResourcesTest : public ApiFixture {
 protected:
  static std::string QrPath(const std::string& id) {
    return std::string(kParent) + "/queuedResources/" + id;
  }
  static std::string QrName(const std::string& id) {
    return std::string("projects/p/locations/") + kZone + "/queuedResources/" + id;
  }
  static Json QrBody(const std::string& node_id, const std::string& type = "v4-8",
                     bool spot = true) {
    Json body{{"tpu",
               {{"nodeSpec",
                 {{{"parent", std::string("projects/p/locations/") + kZone},
                   {"nodeId", node_id},
                   {"node", NodeBody(type)}}}}}}};
    if (spot) {
      body["spot"] = Json::object();
    }
    return body;
  }
  std::string State(const std::string& id) {
    return Get(QrPath(id)).json["state"].value("state", std::string());
  }
  // Lets time pass until the QR is in `state` (or 60 s pass).
  bool WaitState(const std::string& id, const std::string& state) {
    for (int i = 0; i < 600; ++i) {
      if (State(id) == state) {
        return true;
      }
      Pass(milliseconds(100));
    }
    return false;
  }
};

TEST_F(QueuedResourcesTest, GoesFromAcceptedToActiveAndMakesItsNode) {
  Reply r = Post(std::string(kParent) + "/queuedResources?queuedResourceId=qr1", QrBody("n1"));
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.json["metadata"]["target"], QrName("qr1"));
  EXPECT_EQ(State("qr1"), "CREATING");
  Json op = WaitOperation(r.json["name"]);
  EXPECT_EQ(op["response"]["@type"], "type.googleapis.com/google.cloud.tpu.v2.QueuedResource");
  EXPECT_EQ(op["response"]["state"]["state"], "ACCEPTED");
  EXPECT_EQ(op["response"]["name"], QrName("qr1"));
  ASSERT_TRUE(WaitState("qr1", "ACTIVE"));
  Json qr = Get(QrPath("qr1")).json;
  EXPECT_EQ(qr["state"]["stateInitiator"], "USER");
  EXPECT_TRUE(qr["state"].contains("activeData"));
  EXPECT_EQ(qr["spot"], Json::object());
  EXPECT_EQ(qr["tpu"]["nodeSpec"][0]["nodeId"], "n1");

  Json node = Get(NodePath("n1")).json;
  EXPECT_EQ(node["state"], "READY");
  EXPECT_EQ(node["queuedResource"], QrName("qr1"));
  EXPECT_EQ(node["schedulingConfig"]["spot"], true);
  EXPECT_FALSE(node.contains("multisliceNode"));
}

TEST_F(QueuedResourcesTest, PassesThroughWaitingAndProvisioning) {
  Post(std::string(kParent) + "/queuedResources?queuedResourceId=qr1", QrBody("n1"));
  std::vector<std::string> states;
  for (int i = 0; i < 100 && (states.empty() || states.back() != "ACTIVE"); ++i) {
    std::string s = State("qr1");
    if (states.empty() || states.back() != s) {
      states.push_back(s);
    }
    Pass(milliseconds(50), milliseconds(50));
  }
  EXPECT_EQ(states, (std::vector<std::string>{"CREATING", "WAITING_FOR_RESOURCES", "PROVISIONING",
                                              "ACTIVE"}));
}

TEST_F(QueuedResourcesTest, MultisliceMakesNumberedNodes) {
  Json body = QrBody("unused");
  body["tpu"]["nodeSpec"][0].erase("nodeId");
  body["tpu"]["nodeSpec"][0]["multisliceParams"] = {{"nodeCount", 3}, {"nodeIdPrefix", "ms"}};
  ASSERT_EQ(Post(std::string(kParent) + "/queuedResources?queuedResourceId=qr1", body).status, 200);
  ASSERT_TRUE(WaitState("qr1", "ACTIVE"));
  for (const char* id : {"ms-0", "ms-1", "ms-2"}) {
    Json node = Get(NodePath(id)).json;
    EXPECT_EQ(node["state"], "READY") << id;
    EXPECT_EQ(node["multisliceNode"], true);
  }
  EXPECT_EQ(Get(NodePath("ms-3")).status, 404);

  // The prefix defaults to the queued resource's id.
  body["tpu"]["nodeSpec"][0]["multisliceParams"] = {{"nodeCount", "2"}};
  ASSERT_EQ(Post(std::string(kParent) + "/queuedResources?queuedResourceId=qr2", body).status, 200);
  ASSERT_TRUE(WaitState("qr2", "ACTIVE"));
  EXPECT_EQ(Get(NodePath("qr2-1")).status, 200);
}

// nodeCount was unbounded: 3,000,000 held the server's lock for 40 s while it planned.
TEST_F(QueuedResourcesTest, MultisliceNodeCountIsBoundedRegression) {
  Json body = QrBody("unused");
  body["tpu"]["nodeSpec"][0].erase("nodeId");
  std::string base = std::string(kParent) + "/queuedResources?queuedResourceId=";
  for (Json count : {Json(3'000'000), Json(257), Json("18446744073709551615"),
                     Json(18446744073709551615ULL), Json(4'294'967'298LL)}) {
    body["tpu"]["nodeSpec"][0]["multisliceParams"] = {{"nodeCount", count}};
    auto start = std::chrono::steady_clock::now();
    Reply r = Post(base + "big", body);
    EXPECT_EQ(r.status, 400) << count << ": " << r.text;
    EXPECT_NE(r.json["error"]["message"].get<std::string>().find("node_count"), std::string::npos)
        << r.text;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  }
  EmulatorConfig config;
  config.max_multislice_nodes = 3;
  Reset(config);
  body["tpu"]["nodeSpec"][0]["multisliceParams"] = {{"nodeCount", 4}};
  EXPECT_EQ(Post(base + "four", body).status, 400);
  body["tpu"]["nodeSpec"][0]["multisliceParams"] = {{"nodeCount", 3}};
  EXPECT_EQ(Post(base + "three", body).status, 200);
}

TEST_F(QueuedResourcesTest, DeleteNeedsForceWhileNodesExist) {
  Post(std::string(kParent) + "/queuedResources?queuedResourceId=qr1", QrBody("n1"));
  ASSERT_TRUE(WaitState("qr1", "ACTIVE"));
  Reply refused = Delete(QrPath("qr1"));
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(refused.json["error"]["status"], "FAILED_PRECONDITION");

  Reply forced = Delete(QrPath("qr1") + "?force=true&$alt=json;enum-encoding=int");
  ASSERT_EQ(forced.status, 200) << forced.text;
  EXPECT_EQ(State("qr1"), "DELETING");
  EXPECT_EQ(Get(NodePath("n1")).json["state"], "DELETING");
  Json op = WaitOperation(forced.json["name"]);
  EXPECT_EQ(op["response"]["@type"], "type.googleapis.com/google.protobuf.Empty");
  EXPECT_EQ(Get(QrPath("qr1")).status, 404);
  EXPECT_EQ(Get(NodePath("n1")).status, 404);
  EXPECT_EQ(hosts_->CallsStartingWith("Destroy " + NodeName("n1")).size(), 1u);
}

TEST_F(QueuedResourcesTest, DeletingTheNodeFirstSuspendsThenPlainDeleteWorks) {
  Post(std::string(kParent) + "/queuedResources?queuedResourceId=qr1",
       QrBody("n1", "v4-8", /*spot=*/false));
  ASSERT_TRUE(WaitState("qr1", "ACTIVE"));
  WaitOperation(Delete(NodePath("n1")).json["name"]);
  ASSERT_TRUE(WaitState("qr1", "SUSPENDED"));
  EXPECT_EQ(Get(QrPath("qr1")).json["state"]["stateInitiator"], "USER");
  Reply del = Delete(QrPath("qr1"));
  ASSERT_EQ(del.status, 200) << del.text;
  WaitOperation(del.json["name"]);
  EXPECT_EQ(Get(QrPath("qr1")).status, 404);
}

TEST_F(QueuedResourcesTest, WaitsDuringAStockoutAndFailsWhenValidUntilPasses) {
  ASSERT_EQ(
      Post("/emulator/v1/faults", Json{{"kind", "stockout"}, {"zone", kZone}, {"family", "v4"}})
          .status,
      200);
  Json body = QrBody("n1");
  body["queueingPolicy"] = {{"validUntilDuration", "10s"}};
  Post(std::string(kParent) + "/queuedResources?queuedResourceId=qr1", body);
  Pass(seconds(5));
  EXPECT_EQ(State("qr1"), "WAITING_FOR_RESOURCES");
  EXPECT_EQ(Get(NodePath("n1")).status, 404);
  Pass(seconds(6));
  Json qr = Get(QrPath("qr1")).json;
  EXPECT_EQ(qr["state"]["state"], "FAILED");
  EXPECT_EQ(qr["state"]["stateInitiator"], "SERVICE");
  EXPECT_EQ(qr["state"]["failedData"]["error"]["code"], 8);
  // FAILED without nodes: a plain delete is allowed.
  EXPECT_EQ(Delete(QrPath("qr1")).status, 200);
}

TEST_F(QueuedResourcesTest, ProvisionsOnceTheStockoutEnds) {
  Post("/emulator/v1/faults", Json{{"kind", "stockout"}, {"zone", kZone}, {"duration", "3s"}});
  Post(std::string(kParent) + "/queuedResources?queuedResourceId=qr1", QrBody("n1"));
  Pass(seconds(2));
  EXPECT_EQ(State("qr1"), "WAITING_FOR_RESOURCES");
  EXPECT_TRUE(WaitState("qr1", "ACTIVE"));
}

TEST_F(QueuedResourcesTest, ValidAfterHoldsTheRequestInAccepted) {
  Json body = QrBody("n1");
  body["queueingPolicy"] = {{"validAfterDuration", "5s"}};
  Post(std::string(kParent) + "/queuedResources?queuedResourceId=qr1", body);
  Pass(seconds(3));
  EXPECT_EQ(State("qr1"), "ACCEPTED");
  EXPECT_TRUE(WaitState("qr1", "ACTIVE"));
}

TEST_F(QueuedResourcesTest, PreemptedSpotNodeSuspendsAndResetRequeues) {
  Post(std::string(kParent) + "/queuedResources?queuedResourceId=qr1", QrBody("n1"));
  ASSERT_TRUE(WaitState("qr1", "ACTIVE"));
  Reply fault = Post("/emulator/v1/faults",
                     Json{{"kind", "preempt"}, {"node", NodeName("n1")}, {"notice", "1s"}});
  ASSERT_EQ(fault.status, 200) << fault.text;
  ASSERT_TRUE(WaitState("qr1", "SUSPENDED"));
  EXPECT_EQ(Get(QrPath("qr1")).json["state"]["stateInitiator"], "SERVICE");
  EXPECT_EQ(Get(NodePath("n1")).status, 404);
  EXPECT_EQ(hosts_->CallsStartingWith("Notify " + NodeName("n1") + " preemption").size(), 1u);

  Reply reset = Post(QrPath("qr1") + ":reset");
  ASSERT_EQ(reset.status, 200) << reset.text;
  EXPECT_EQ(reset.json["metadata"]["verb"], "reset");
  EXPECT_EQ(WaitOperation(reset.json["name"])["response"]["@type"],
            "type.googleapis.com/google.cloud.tpu.v2.QueuedResource");
  EXPECT_TRUE(WaitState("qr1", "ACTIVE"));
  EXPECT_EQ(Get(NodePath("n1")).json["state"], "READY");
  EXPECT_EQ(Post(QrPath("qr1") + ":reset").status, 400);  // not while ACTIVE
}

TEST_F(QueuedResourcesTest, QuotaShortFailsTheRequest) {
  EmulatorConfig config;
  config.quota.push_back({"us-central2", "v4", QuotaTier::kSpot, 4});
  Reset(config);
  Post(std::string(kParent) + "/queuedResources?queuedResourceId=qr1", QrBody("n1", "v4-16"));
  ASSERT_TRUE(WaitState("qr1", "FAILED"));
  Json error = Get(QrPath("qr1")).json["state"]["failedData"]["error"];
  EXPECT_EQ(error["code"], 8);
  EXPECT_EQ(error["message"],
            "Quota 'TPUV4PreemptiblePerProjectPerRegionForTPUAPI' exhausted. Limit 4 in region "
            "us-central2");
}

TEST_F(QueuedResourcesTest, SuspendedRequestsKeepHoldingQuota) {
  EmulatorConfig config;
  config.quota.push_back({"us-central2", "v4", QuotaTier::kAny, 4});
  Reset(config);
  Post(std::string(kParent) + "/queuedResources?queuedResourceId=qr1", QrBody("n1"));
  ASSERT_TRUE(WaitState("qr1", "ACTIVE"));
  Post("/emulator/v1/faults",
       Json{{"kind", "preempt"}, {"node", NodeName("n1")}, {"notice", "0s"}});
  ASSERT_TRUE(WaitState("qr1", "SUSPENDED"));
  EXPECT_EQ(Post(std::string(kParent) + "/nodes?nodeId=other", NodeBody()).status, 429);
  WaitOperation(Delete(QrPath("qr1")).json["name"]);
  EXPECT_EQ(Post(std::string(kParent) + "/nodes?nodeId=other", NodeBody()).status, 200);
}

TEST_F(QueuedResourcesTest, RequestsAreValidated) {
  std::string base = std::string(kParent) + "/queuedResources";
  EXPECT_EQ(Post(base, QrBody("n1")).status, 400);                            // no id
  EXPECT_EQ(Post(base + "?queuedResourceId=a/b", QrBody("n1")).status, 400);  // bad id
  Json bad_parent = QrBody("n1");
  bad_parent["tpu"]["nodeSpec"][0]["parent"] = "projects/p/locations/us-east5-a";
  EXPECT_EQ(Post(base + "?queuedResourceId=q", bad_parent).status, 400);
  Json both = QrBody("n1");
  both["tpu"]["nodeSpec"][0]["multisliceParams"] = {{"nodeCount", 2}};
  EXPECT_EQ(Post(base + "?queuedResourceId=q", both).status, 400);
  Json tiers = QrBody("n1");
  tiers["guaranteed"] = Json::object();
  EXPECT_EQ(Post(base + "?queuedResourceId=q", tiers).status, 400);
  Json two_policies = QrBody("n1");
  two_policies["queueingPolicy"] = {{"validUntilDuration", "10s"}, {"validAfterDuration", "1s"}};
  EXPECT_EQ(Post(base + "?queuedResourceId=q", two_policies).status, 400);
  Json bad_duration = QrBody("n1");
  bad_duration["queueingPolicy"] = {{"validUntilDuration", "10 minutes"}};
  EXPECT_EQ(Post(base + "?queuedResourceId=q", bad_duration).status, 400);
  EXPECT_EQ(Post(base + "?queuedResourceId=q", Json{{"tpu", {{"nodeSpec", Json::array()}}}}).status,
            400);
  Json bad_type = QrBody("n1", "v5p-8");
  EXPECT_EQ(Post(base + "?queuedResourceId=q", bad_type).status, 400);
  Json unknown = QrBody("n1");
  unknown["bestEffort"] = Json::object();  // v2alpha1 only
  Reply r = Post(base + "?queuedResourceId=q", unknown);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json["error"]["message"],
            "Invalid JSON payload received. Unknown name \"bestEffort\" at 'queued_resource': "
            "Cannot find field.");

  ASSERT_EQ(Post(base + "?queuedResourceId=q&requestId=r1", QrBody("n1")).status, 200);
  Reply again = Post(base + "?queuedResourceId=q&requestId=r1", QrBody("n1"));
  EXPECT_EQ(again.status, 200);  // same request id: the same operation
  EXPECT_EQ(Post(base + "?queuedResourceId=q", QrBody("n1")).status, 409);
  EXPECT_EQ(Get(QrPath("nope")).status, 404);
  EXPECT_EQ(Delete(QrPath("nope")).status, 404);
  EXPECT_EQ(Post(QrPath("nope") + ":reset").status, 404);
}

// Negative durations were accepted (a window already closed), and huge ones overflowed
// the clock's nanoseconds.
TEST_F(QueuedResourcesTest, DurationsOutOfRangeAreRejectedRegression) {
  std::string base = std::string(kParent) + "/queuedResources?queuedResourceId=";
  int n = 0;
  auto post = [&](const Json& body) { return Post(base + "q" + std::to_string(n++), body); };
  for (const char* field : {"validUntilDuration", "validAfterDuration"}) {
    for (const char* bad : {"-5s", "-0.5s", "99999999999999s", "315576000001s", "1e3s"}) {
      Json body = QrBody("n" + std::to_string(n));
      body["queueingPolicy"] = {{field, bad}};
      Reply r = post(body);
      EXPECT_EQ(r.status, 400) << field << " " << bad << ": " << r.text;
      EXPECT_EQ(r.json["error"]["status"], "INVALID_ARGUMENT");
    }
  }
  for (const char* bad : {"-5s", "99999999999999s"}) {
    Json body = QrBody("n" + std::to_string(n), "v4-8", /*spot=*/false);
    body["guaranteed"] = {{"minDuration", bad}};
    Reply r = post(body);
    EXPECT_EQ(r.status, 400) << bad << ": " << r.text;
    EXPECT_NE(r.json["error"]["message"].get<std::string>().find(
                  "queued_resource.guaranteed.min_duration"),
              std::string::npos);
  }
  // The largest Duration there is: valid, and the request then simply never expires.
  Json forever = QrBody("nforever");
  forever["queueingPolicy"] = {{"validUntilDuration", "315576000000s"}};
  ASSERT_EQ(Post(base + "forever", forever).status, 200);
  ASSERT_TRUE(WaitState("forever", "ACTIVE"));
  Json zero = QrBody("nzero", "v4-8", /*spot=*/false);
  zero["guaranteed"] = {{"minDuration", "0s"}};
  EXPECT_EQ(Post(base + "zero", zero).status, 200);
}

TEST_F(QueuedResourcesTest, ListPages) {
  for (const char* id : {"qa", "qb", "qc"}) {
    Post(std::string(kParent) + "/queuedResources?queuedResourceId=" + id,
         QrBody(std::string("n") + id));
  }
  Reply first = Get(std::string(kParent) + "/queuedResources?pageSize=2");
  ASSERT_EQ(first.json["queuedResources"].size(), 2u);
  Reply second = Get(std::string(kParent) + "/queuedResources?pageSize=2&pageToken=" +
                     first.json["nextPageToken"].get<std::string>());
  ASSERT_EQ(second.json["queuedResources"].size(), 1u);
  EXPECT_EQ(second.json["queuedResources"][0]["name"], QrName("qc"));
  EXPECT_FALSE(second.json.contains("nextPageToken"));
}

TEST_F(QueuedResourcesTest, AnExistingNodeNameFailsTheRequest) {
  CreateNode("n1");
  Post(std::string(kParent) + "/queuedResources?queuedResourceId=qr1", QrBody("n1"));
  ASSERT_TRUE(WaitState("qr1", "FAILED"));
  EXPECT_EQ(Get(QrPath("qr1")).json["state"]["failedData"]["error"]["code"], 6);
}

}  // namespace
}  // namespace tpufleet::emulator
