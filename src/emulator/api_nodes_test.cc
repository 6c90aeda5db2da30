#include <regex>

#include "emulator/testing/api_fixture.h"

namespace tpufleet::emulator {
namespace {

class NodesTest : public ApiFixture {};

TEST_F(NodesTest, CreateAnswersWithOperationThenNodeTurnsReady) {
  Reply r =
      Post(std::string(kParent) + "/nodes?nodeId=n1&$alt=json;enum-encoding=int", NodeBody("v4-8"));
  ASSERT_EQ(r.status, 200) << r.text;
  std::string op = r.json["name"];
  EXPECT_TRUE(
      std::regex_match(op, std::regex("projects/p/locations/us-central2-b/operations/"
                                      "operation-[0-9]+-[0-9a-f]{13}-[0-9a-f]{8}-[0-9a-f]{8}")))
      << op;
  EXPECT_FALSE(r.json.contains("done"));
  EXPECT_EQ(r.json["metadata"]["@type"],
            "type.googleapis.com/google.cloud.tpu.v2.OperationMetadata");
  EXPECT_EQ(r.json["metadata"]["verb"], "create");
  EXPECT_EQ(r.json["metadata"]["target"], NodeName("n1"));
  EXPECT_EQ(r.json["metadata"]["apiVersion"], "v2");

  Reply node = Get(NodePath("n1"));
  ASSERT_EQ(node.status, 200);
  EXPECT_EQ(node.json["state"], "CREATING");
  EXPECT_FALSE(node.json.contains("networkEndpoints"));

  Json done = WaitOperation(op);
  ASSERT_TRUE(done.value("done", false)) << done.dump();
  EXPECT_FALSE(done.contains("error"));
  EXPECT_EQ(done["response"]["@type"], "type.googleapis.com/google.cloud.tpu.v2.Node");
  EXPECT_EQ(done["response"]["state"], "READY");
  EXPECT_TRUE(done["metadata"].contains("endTime"));

  node = Get(NodePath("n1"));
  EXPECT_EQ(node.json["state"], "READY");
  EXPECT_EQ(node.json["health"], "HEALTHY");
  EXPECT_EQ(node.json["apiVersion"], "V2");
  EXPECT_EQ(node.json["name"], NodeName("n1"));
  EXPECT_EQ(node.json["acceleratorType"], "v4-8");
  EXPECT_EQ(node.json["acceleratorConfig"], (Json{{"type", "V4"}, {"topology", "2x2x1"}}));
  ASSERT_TRUE(node.json["id"].is_string());
  EXPECT_EQ(node.json["id"].get<std::string>().size(), 19u);
  EXPECT_EQ(node.json["createTime"], "2026-01-01T00:00:00Z");
  ASSERT_EQ(node.json["networkEndpoints"].size(), 1u);
  EXPECT_EQ(node.json["networkEndpoints"][0]["port"], 8470);
  EXPECT_EQ(node.json["networkEndpoints"][0]["ipAddress"], "198.18.0.1");
  EXPECT_FALSE(node.json["networkEndpoints"][0].contains("accessConfig"));
  EXPECT_EQ(node.json["schedulingConfig"], Json::object());
  EXPECT_EQ(hosts_->CallsStartingWith("Boot").size(), 1u);
  EXPECT_EQ(hosts_->last_boot_spec().id, node.json["id"]);
  EXPECT_EQ(hosts_->last_boot_spec().accelerator_type, "v4-8");
}

TEST_F(NodesTest, StaysCreatingUntilTheWorkersHaveBooted) {
  Reply r = Post(std::string(kParent) + "/nodes?nodeId=n1", NodeBody());
  clock_.Advance(seconds(30));
  server_->Tick();
  EXPECT_EQ(Get(NodePath("n1")).json["state"], "CREATING");  // Boot has not run yet
  RunHostWork();
  server_->Tick();
  EXPECT_EQ(Get(NodePath("n1")).json["state"], "READY");
}

TEST_F(NodesTest, StaysCreatingUntilTheCreateTimeHasPassed) {
  Post(std::string(kParent) + "/nodes?nodeId=n1", NodeBody());
  RunHostWork();
  clock_.Advance(milliseconds(900));
  EXPECT_EQ(Get(NodePath("n1")).json["state"], "CREATING");
  clock_.Advance(milliseconds(100));
  EXPECT_EQ(Get(NodePath("n1")).json["state"], "READY");
}

TEST_F(NodesTest, MultiHostNodeHasOneEndpointPerWorkerAndGuestAttributes) {
  Json body = NodeBody("v4-32");
  body["networkConfig"] = {{"enableExternalIps", true}};
  Json op = CreateNode("pod", body);
  ASSERT_EQ(op["response"]["state"], "READY");
  Json node = Get(NodePath("pod")).json;
  ASSERT_EQ(node["networkEndpoints"].size(), 4u);
  for (const Json& ep : node["networkEndpoints"]) {
    EXPECT_EQ(ep["accessConfig"]["externalIp"], ep["ipAddress"]);
  }
  EXPECT_EQ(hosts_->last_boot_spec().workers, 4);

  Reply all = Post(NodePath("pod") + ":getGuestAttributes", Json{{"workerIds", {""}}});
  ASSERT_EQ(all.status, 200) << all.text;
  ASSERT_EQ(all.json["guestAttributes"].size(), 4u);
  const Json& items = all.json["guestAttributes"][2]["queryValue"]["items"];
  bool key = false, hostname = false;
  for (const Json& item : items) {
    if (item["key"] == "ssh-ed25519") {
      key = true;
      EXPECT_EQ(item["value"].get<std::string>().rfind("AAAAC3NzaC1lZDI1NTE5", 0), 0u) << item;
    }
    if (item["key"] == "hostname") {
      hostname = true;
      EXPECT_TRUE(
          std::regex_match(item["value"].get<std::string>(), std::regex("t1v-n-[0-9a-f]{8}-w-2")));
    }
  }
  EXPECT_TRUE(key && hostname) << items;

  Reply one =
      Post(NodePath("pod") + ":getGuestAttributes", Json{{"workerIds", {"3"}}, {"queryPath", "/"}});
  ASSERT_EQ(one.json["guestAttributes"].size(), 1u);
  EXPECT_EQ(one.json["guestAttributes"][0]["queryPath"], "/");
  EXPECT_EQ(Post(NodePath("pod") + ":getGuestAttributes", Json{{"workerIds", {"4"}}}).status, 400);
  EXPECT_EQ(
      Post(NodePath("pod") + ":getGuestAttributes", Json::object()).json["guestAttributes"].size(),
      4u);
}

TEST_F(NodesTest, MissingAndDuplicateNodesUseGoogleErrorEnvelope) {
  Reply missing = Get(NodePath("nope"));
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.json["error"]["code"], 404);
  EXPECT_EQ(missing.json["error"]["status"], "NOT_FOUND");
  EXPECT_EQ(missing.json["error"]["message"], "Resource '" + NodeName("nope") + "' was not found");
  EXPECT_EQ(missing.json["error"]["details"][0]["@type"],
            "type.googleapis.com/google.rpc.ResourceInfo");
  EXPECT_EQ(missing.json["error"]["details"][0]["resourceName"], NodeName("nope"));

  CreateNode("n1");
  Reply dup = Post(std::string(kParent) + "/nodes?nodeId=n1", NodeBody());
  EXPECT_EQ(dup.status, 409);
  EXPECT_EQ(dup.json["error"]["status"], "ALREADY_EXISTS");
  EXPECT_EQ(dup.json["error"]["message"], "Resource '" + NodeName("n1") + "' already exists");
  EXPECT_EQ(dup.json["error"]["details"][0]["resourceName"], NodeName("n1"));

  EXPECT_EQ(Delete(NodePath("nope")).status, 404);
  EXPECT_EQ(Post(NodePath("nope") + ":stop").status, 404);
  EXPECT_EQ(Patch(NodePath("nope") + "?updateMask=labels", Json::object()).status, 404);
}

TEST_F(NodesTest, TypeNotOfferedInZoneIsInvalidArgument) {
  Reply r = Post("/v2/projects/p/locations/us-central1-c/nodes?nodeId=n1", NodeBody("v3-8"));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json["error"]["status"], "INVALID_ARGUMENT");
  std::string msg = r.json["error"]["message"];
  EXPECT_EQ(
      msg.rfind(
          "CloudTpu received an invalid AcceleratorType, \"v3-8\" for zone \"us-central1-c\". "
          "Valid values are \"v2-8, v2-32, ",
          0),
      0u)
      << msg;
  EXPECT_EQ(Post(std::string(kParent) + "/nodes?nodeId=n1", NodeBody("v4-12")).status, 400);
  // Aliases are tpufleet's; the API knows only its own names.
  EXPECT_EQ(
      Post("/v2/projects/p/locations/us-central1-a/nodes?nodeId=n1", NodeBody("v5e-8")).status,
      400);
  EXPECT_EQ(Post("/v2/projects/p/locations/us-central1-a/nodes?nodeId=n1", NodeBody("v5litepod-8"))
                .status,
            200);
}

TEST_F(NodesTest, EnumsMayBeNumbersAndComeBackAsNames) {
  ASSERT_EQ(Post("/compute/v1/projects/p/zones/us-central2-b/disks",
                 Json{{"name", "d1"}, {"type", "pd-balanced"}, {"sizeGb", "10"}})
                .status,
            200);
  Pass(seconds(1));  // the disk is READY
  Json body{
      {"acceleratorConfig", {{"type", 7}, {"topology", "2x2x4"}}},
      {"runtimeVersion", "tpu-ubuntu2204-base"},
      {"dataDisks", {{{"sourceDisk", "projects/p/zones/us-central2-b/disks/d1"}, {"mode", 2}}}},
      {"labels", Json::object()},
      {"metadata", Json::object()}};
  Json op = CreateNode("n1", body);
  ASSERT_FALSE(op.contains("error")) << op;
  Json node = Get(NodePath("n1")).json;
  EXPECT_EQ(node["acceleratorType"], "v4-32");
  EXPECT_EQ(node["acceleratorConfig"]["type"], "V4");
  EXPECT_EQ(node["dataDisks"][0]["mode"], "READ_ONLY");
  EXPECT_EQ(node["networkEndpoints"].size(), 4u);

  body["dataDisks"][0]["mode"] = "READ_ONLY";
  EXPECT_EQ(Post(std::string(kParent) + "/nodes?nodeId=n2", body).status, 200);
  body["dataDisks"][0]["mode"] = 9;
  Reply bad = Post(std::string(kParent) + "/nodes?nodeId=n3", body);
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.json["error"]["message"].get<std::string>().find("node.data_disks[0].mode"),
            std::string::npos);
}

TEST_F(NodesTest, RequestBodiesAreCheckedLikeGoogleDoes) {
  Json body = NodeBody();
  body["acceleratorTypo"] = "v4-8";
  Reply r = Post(std::string(kParent) + "/nodes?nodeId=n1", body);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json["error"]["message"],
            "Invalid JSON payload received. Unknown name \"acceleratorTypo\" at 'node': Cannot "
            "find field.");

  body = NodeBody();
  body["networkConfig"] = {{"enableExternalIps", "yes"}};
  EXPECT_EQ(Post(std::string(kParent) + "/nodes?nodeId=n1", body).status, 400);

  // Original proto names are accepted too, and nulls are ignored.
  Json snake{{"accelerator_type", "v4-8"},
             {"runtime_version", "tpu-ubuntu2204-base"},
             {"description", nullptr}};
  EXPECT_EQ(Post(std::string(kParent) + "/nodes?nodeId=n1", snake).status, 200);

  EXPECT_EQ(Send("POST", std::string(kParent) + "/nodes?nodeId=n2", "{not json").status, 400);
  EXPECT_EQ(
      Post(std::string(kParent) + "/nodes?nodeId=n2", Json{{"acceleratorType", "v4-8"}}).status,
      400);
  EXPECT_EQ(Post(std::string(kParent) + "/nodes?nodeId=n2", Json{{"runtimeVersion", "x"}}).status,
            400);
}

TEST_F(NodesTest, NodeIdsFollowTheApiPattern) {
  for (const char* bad : {"Bad", "1abc", "a_b", "abc-", "-abc"}) {
    EXPECT_EQ(Post(std::string(kParent) + "/nodes?nodeId=" + bad, NodeBody()).status, 400) << bad;
  }
  EXPECT_EQ(Post(std::string(kParent) + "/nodes", NodeBody()).status, 400);
  EXPECT_EQ(Post(std::string(kParent) + "/nodes?nodeId=" + std::string(64, 'a'), NodeBody()).status,
            400);
  EXPECT_EQ(Post(std::string(kParent) + "/nodes?nodeId=" + std::string(63, 'a'), NodeBody()).status,
            200);
  EXPECT_EQ(Post(std::string(kParent) + "/nodes?nodeId=a-1-b", NodeBody()).status, 200);
}

TEST_F(NodesTest, ListPagesThroughNodesInNameOrder) {
  for (const char* id : {"c", "a", "b"}) {
    Post(std::string(kParent) + "/nodes?nodeId=" + id, NodeBody());
  }
  Post("/v2/projects/p/locations/us-central1-a/nodes?nodeId=elsewhere", NodeBody("v5litepod-8"));
  Post("/v2/projects/other/locations/us-central2-b/nodes?nodeId=x", NodeBody());
  std::vector<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    Reply r = Get(std::string(kParent) + "/nodes?pageSize=1" +
                  (token.empty() ? "" : "&pageToken=" + token));
    ASSERT_EQ(r.status, 200) << r.text;
    ASSERT_EQ(r.json["nodes"].size(), 1u);
    seen.push_back(r.json["nodes"][0]["name"]);
    token = r.json.value("nextPageToken", std::string());
    ++pages;
  } while (!token.empty() && pages < 10);
  EXPECT_EQ(seen, (std::vector<std::string>{NodeName("a"), NodeName("b"), NodeName("c")}));
  EXPECT_EQ(Get(std::string(kParent) + "/nodes").json["nodes"].size(), 3u);
  EXPECT_FALSE(Get(std::string(kParent) + "/nodes").json.contains("nextPageToken"));
  EXPECT_EQ(Get(std::string(kParent) + "/nodes?pageToken=%%%").status, 400);
  EXPECT_EQ(Get(std::string(kParent) + "/nodes?pageSize=-1").status, 400);
  EXPECT_EQ(Get("/v2/projects/p/locations/us-east1-d/nodes").json, Json::object());
}

TEST_F(NodesTest, DefaultPageSizeComesFromTheConfig) {
  EmulatorConfig config;
  config.default_page_size = 2;
  Reset(config);
  for (const char* id : {"a", "b", "c"}) {
    Post(std::string(kParent) + "/nodes?nodeId=" + id, NodeBody());
  }
  Reply r = Get(std::string(kParent) + "/nodes");
  EXPECT_EQ(r.json["nodes"].size(), 2u);
  EXPECT_TRUE(r.json.contains("nextPageToken"));
}

TEST_F(NodesTest, DeleteGoesThroughDeletingAndDestroysTheWorkers) {
  CreateNode("n1");
  Reply r = Delete(NodePath("n1"));
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.json["metadata"]["verb"], "delete");
  EXPECT_EQ(Get(NodePath("n1")).json["state"], "DELETING");
  EXPECT_EQ(Delete(NodePath("n1")).status, 400);  // already deleting
  Json done = WaitOperation(r.json["name"]);
  EXPECT_EQ(done["response"], (Json{{"@type", "type.googleapis.com/google.protobuf.Empty"}}));
  EXPECT_EQ(Get(NodePath("n1")).status, 404);
  EXPECT_EQ(hosts_->CallsStartingWith("Destroy " + NodeName("n1")).size(), 1u);
}

TEST_F(NodesTest, DeleteDuringCreateAbortsTheCreateOperation) {
  Reply create = Post(std::string(kParent) + "/nodes?nodeId=n1", NodeBody());
  Reply del = Delete(NodePath("n1"));
  ASSERT_EQ(del.status, 200);
  Json op = Get("/v2/" + create.json["name"].get<std::string>()).json;
  ASSERT_TRUE(op.value("done", false));
  EXPECT_EQ(op["error"]["code"], 10);
  WaitOperation(del.json["name"]);
  EXPECT_EQ(Get(NodePath("n1")).status, 404);
  // Boot ran before Destroy: calls for one node keep their order.
  std::vector<std::string> calls = hosts_->calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].rfind("Boot", 0), 0u);
  EXPECT_EQ(calls[1].rfind("Destroy", 0), 0u);
}

TEST_F(NodesTest, StopAndStartASingleHostNode) {
  CreateNode("n1");
  std::string address = Get(NodePath("n1")).json["networkEndpoints"][0]["ipAddress"];
  Reply stop = Post(NodePath("n1") + ":stop");
  ASSERT_EQ(stop.status, 200) << stop.text;
  EXPECT_EQ(Get(NodePath("n1")).json["state"], "STOPPING");
  Json stopped = WaitOperation(stop.json["name"]);
  EXPECT_EQ(stopped["response"]["state"], "STOPPED");
  EXPECT_EQ(Get(NodePath("n1")).json["state"], "STOPPED");
  EXPECT_EQ(hosts_->CallsStartingWith("Halt").size(), 1u);
  EXPECT_EQ(Post(NodePath("n1") + ":stop").status, 400);

  Reply start = Post(NodePath("n1") + ":start");
  ASSERT_EQ(start.status, 200);
  EXPECT_EQ(Get(NodePath("n1")).json["state"], "STARTING");
  Json started = WaitOperation(start.json["name"]);
  EXPECT_EQ(started["response"]["state"], "READY");
  EXPECT_EQ(Get(NodePath("n1")).json["networkEndpoints"][0]["ipAddress"], address);
  EXPECT_EQ(hosts_->CallsStartingWith("Boot " + NodeName("n1") + " new_addresses=0").size(), 2u);
  EXPECT_EQ(Post(NodePath("n1") + ":start").status, 400);
}

// A node that filled its zone could never start again: it counted its own chips.
TEST_F(NodesTest, StartFitsInTheCapacityTheNodeGaveBack) {
  EmulatorConfig config;
  config.capacity.push_back({"us-central2-b", "v4", 4});  // exactly one v4-8
  Reset(config);
  CreateNode("n1");
  WaitOperation(Post(NodePath("n1") + ":stop").json["name"]);
  Json started = WaitOperation(Post(NodePath("n1") + ":start").json["name"]);
  EXPECT_FALSE(started.contains("error")) << started.dump();
  EXPECT_EQ(Get(NodePath("n1")).json["state"], "READY");
}

// A start on a stopped node whose patch was still running replaced the patch's step, so
// the patch operation never finished.
TEST_F(NodesTest, StartWaitsForAPendingPatch) {
  CreateNode("n1");
  WaitOperation(Post(NodePath("n1") + ":stop").json["name"]);
  Reply patch = Send("PATCH", NodePath("n1") + "?updateMask=labels", R"({"labels":{"a":"b"}})");
  ASSERT_EQ(patch.status, 200) << patch.text;
  Reply start = Post(NodePath("n1") + ":start");
  EXPECT_EQ(start.status, 409) << start.text;
  Json patched = WaitOperation(patch.json["name"]);
  EXPECT_TRUE(patched.value("done", false));
  EXPECT_EQ(Post(NodePath("n1") + ":start").status, 200);
}

TEST_F(NodesTest, StopAndStartAreRefusedForMultiHostNodes) {
  CreateNode("pod", NodeBody("v4-32"));
  Reply r = Post(NodePath("pod") + ":stop");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.json["error"]["message"].get<std::string>().find("single TPU nodes"),
            std::string::npos);
  EXPECT_EQ(Post(NodePath("pod") + ":start").status, 400);
}

TEST_F(NodesTest, StopIsRefusedWhileCreating) {
  Post(std::string(kParent) + "/nodes?nodeId=n1", NodeBody());
  Reply r = Post(NodePath("n1") + ":stop");
  EXPECT_EQ(r.status, 400);
  std::string msg = r.json["error"]["message"];
  EXPECT_TRUE(std::regex_match(
      msg, std::regex("Cloud TPU received a bad request\\. stop is not supported while in "
                      "state CREATING \\[EID: 0x[0-9a-f]+\\]")))
      << msg;
}

TEST_F(NodesTest, PatchAppliesOnlyTheMaskedFields) {
  Json body = NodeBody();
  body["labels"] = {{"env", "dev"}};
  body["description"] = "before";
  body["metadata"] = {{"ssh-keys", "alice:ssh-ed25519 AAAA alice"}};
  CreateNode("n1", body);
  hosts_->ClearCalls();

  Json change{{"labels", {{"env", "prod"}, {"team", "ml"}}}, {"description", "after"}};
  Reply r = Patch(NodePath("n1") + "?updateMask=labels", change);
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.json["metadata"]["verb"], "update");
  Json done = WaitOperation(r.json["name"]);
  EXPECT_EQ(done["response"]["labels"], change["labels"]);
  Json node = Get(NodePath("n1")).json;
  EXPECT_EQ(node["labels"], change["labels"]);
  EXPECT_EQ(node["description"], "before");
  EXPECT_TRUE(hosts_->CallsStartingWith("SetMetadata").empty());

  Json md{{"metadata",
           {{"ssh-keys", "alice:ssh-ed25519 AAAA alice\nbob:ssh-ed25519 BBBB bob"}, {"x", "1"}}}};
  r = Patch(NodePath("n1") + "?updateMask=metadata,description", md);
  ASSERT_EQ(r.status, 200) << r.text;
  WaitOperation(r.json["name"]);
  node = Get(NodePath("n1")).json;
  EXPECT_EQ(node["metadata"], md["metadata"]);
  EXPECT_FALSE(node.contains("description"));  // masked and absent: cleared
  EXPECT_EQ(hosts_->CallsStartingWith("SetMetadata " + NodeName("n1") + " keys=ssh-keys,x").size(),
            1u);
  auto want = md["metadata"].get<std::map<std::string, std::string>>();
  EXPECT_EQ(hosts_->metadata_of(NodeName("n1")), want);

  r = Patch(NodePath("n1") + "?updateMask=network_config.enable_external_ips",
            Json{{"networkConfig", {{"enableExternalIps", true}}}});
  ASSERT_EQ(r.status, 200) << r.text;
  WaitOperation(r.json["name"]);
  EXPECT_TRUE(Get(NodePath("n1")).json["networkEndpoints"][0].contains("accessConfig"));
}

TEST_F(NodesTest, PatchNeedsAKnownMaskAndAnIdleNode) {
  CreateNode("n1");
  EXPECT_EQ(Patch(NodePath("n1"), Json{{"labels", {{"a", "b"}}}}).status, 400);
  Reply bad = Patch(NodePath("n1") + "?updateMask=acceleratorType", NodeBody("v4-16"));
  EXPECT_EQ(bad.status, 400);
  Reply first = Patch(NodePath("n1") + "?updateMask=labels", Json{{"labels", {{"a", "b"}}}});
  ASSERT_EQ(first.status, 200);
  Reply second = Patch(NodePath("n1") + "?updateMask=labels", Json{{"labels", {{"a", "c"}}}});
  EXPECT_EQ(second.status, 409);  // gcloud ignores 409 on its ssh-keys patch
  EXPECT_EQ(second.json["error"]["status"], "ABORTED");
}

TEST_F(NodesTest, RequestIdMakesARetriedCreateIdempotent) {
  Reply a = Post(std::string(kParent) + "/nodes?nodeId=n1&requestId=r-1", NodeBody());
  Reply b = Post(std::string(kParent) + "/nodes?nodeId=n1&requestId=r-1", NodeBody());
  ASSERT_EQ(a.status, 200);
  ASSERT_EQ(b.status, 200);
  EXPECT_EQ(a.json["name"], b.json["name"]);
  RunHostWork();
  EXPECT_EQ(hosts_->CallsStartingWith("Boot").size(), 1u);
  EXPECT_EQ(Post(std::string(kParent) + "/nodes?nodeId=n1", NodeBody()).status, 409);
}

// requestIds were remembered forever: the map grew with every call that sent one.
TEST_F(NodesTest, RequestIdsAreForgottenAfterAnHourRegression) {
  Reply a = Post(std::string(kParent) + "/nodes?nodeId=n1&requestId=r-1", NodeBody());
  ASSERT_EQ(a.status, 200);
  clock_.Advance(std::chrono::minutes(59));
  Reply within = Post(std::string(kParent) + "/nodes?nodeId=n1&requestId=r-1", NodeBody());
  EXPECT_EQ(within.status, 200);
  EXPECT_EQ(within.json["name"], a.json["name"]);
  clock_.Advance(std::chrono::minutes(1));
  // Now a new call: n1 exists, so it is a conflict rather than the old operation.
  Reply after = Post(std::string(kParent) + "/nodes?nodeId=n1&requestId=r-1", NodeBody());
  EXPECT_EQ(after.status, 409) << after.text;
  // A forgotten id may be used again, and is remembered again.
  Reply reused = Post(std::string(kParent) + "/nodes?nodeId=n2&requestId=r-1", NodeBody());
  ASSERT_EQ(reused.status, 200);
  EXPECT_NE(reused.json["name"], a.json["name"]);
  EXPECT_EQ(Post(std::string(kParent) + "/nodes?nodeId=n2&requestId=r-1", NodeBody()).json["name"],
            reused.json["name"]);
}

TEST_F(NodesTest, CapacityIsHeldByRunningNodesAndFreedByStop) {
  EmulatorConfig config;
  config.capacity.push_back({kZone, "v4", 4});
  Reset(config);
  Json first = CreateNode("n1");
  ASSERT_FALSE(first.contains("error"));
  Reply second = Post(std::string(kParent) + "/nodes?nodeId=n2", NodeBody());
  ASSERT_EQ(second.status, 200);  // a stockout is not synchronous
  Json failed = WaitOperation(second.json["name"]);
  EXPECT_EQ(failed["error"]["code"], 8);
  EXPECT_TRUE(std::regex_match(
      failed["error"]["message"].get<std::string>(),
      std::regex("There is no more capacity in the zone \"us-central2-b\"; you can try in "
                 "another zone where Cloud TPU Nodes are offered \\(see "
                 "https://cloud.google.com/tpu/docs/regions\\) \\[EID: 0x[0-9a-f]+\\]")))
      << failed;
  EXPECT_EQ(Get(NodePath("n2")).status, 404);

  WaitOperation(Post(NodePath("n1") + ":stop").json["name"]);
  EXPECT_FALSE(CreateNode("n3").contains("error"));
  Json start = WaitOperation(Post(NodePath("n1") + ":start").json["name"]);
  EXPECT_EQ(start["error"]["code"], 8);
  EXPECT_EQ(Get(NodePath("n1")).json["state"], "STOPPED");
}

TEST_F(NodesTest, QuotaIsCountedPerRegionAndReleasedOnDelete) {
  EmulatorConfig config;
  config.quota.push_back({"us-central2", "v4", QuotaTier::kAny, 8});
  Reset(config);
  CreateNode("a");
  CreateNode("b");
  Reply over = Post(std::string(kParent) + "/nodes?nodeId=c", NodeBody());
  EXPECT_EQ(over.status, 429);
  EXPECT_EQ(over.json["error"]["status"], "RESOURCE_EXHAUSTED");
  EXPECT_EQ(over.json["error"]["message"],
            "Quota limit 'TPUV4PerProjectPerRegionForTPUAPI' has been exceeded. Limit: 8 in region "
            "us-central2.");
  const Json& info = over.json["error"]["details"][0];
  EXPECT_EQ(info["@type"], "type.googleapis.com/google.rpc.ErrorInfo");
  EXPECT_EQ(info["domain"], "googleapis.com");
  EXPECT_EQ(info["metadata"]["quota_limit"], "TPUV4PerProjectPerRegionForTPUAPI");
  EXPECT_EQ(Get(NodePath("c")).status, 404);

  // A stopped node still counts; a deleted one does not.
  WaitOperation(Post(NodePath("a") + ":stop").json["name"]);
  EXPECT_EQ(Post(std::string(kParent) + "/nodes?nodeId=c", NodeBody()).status, 429);
  WaitOperation(Delete(NodePath("a")).json["name"]);
  EXPECT_FALSE(CreateNode("c").contains("error"));
}

TEST_F(NodesTest, SpotQuotaIsSeparate) {
  EmulatorConfig config;
  config.quota.push_back({"us-central2", "v4", QuotaTier::kSpot, 4});
  Reset(config);
  Json spot = NodeBody();
  spot["schedulingConfig"] = {{"spot", true}};
  CreateNode("s1", spot);
  Reply over = Post(std::string(kParent) + "/nodes?nodeId=s2", spot);
  EXPECT_EQ(over.status, 429);
  EXPECT_NE(over.json["error"]["message"].get<std::string>().find(
                "TPUV4PreemptiblePerProjectPerRegionForTPUAPI"),
            std::string::npos);
  EXPECT_FALSE(CreateNode("od").contains("error"));
}

TEST_F(NodesTest, FailedBootFailsTheCreateAndLeavesNoNode) {
  hosts_->set_fail_boot(FailedPreconditionError("worker hosts need root"));
  Reply r = Post(std::string(kParent) + "/nodes?nodeId=n1", NodeBody());
  Json op = WaitOperation(r.json["name"]);
  EXPECT_EQ(op["error"]["code"], 13);
  EXPECT_NE(op["error"]["message"].get<std::string>().find("worker hosts need root"),
            std::string::npos);
  EXPECT_EQ(Get(NodePath("n1")).status, 404);
  EXPECT_EQ(hosts_->CallsStartingWith("Destroy").size(), 1u);
}

TEST_F(NodesTest, ResponseDefaultsLookLikeARealNode) {
  Json body = NodeBody();
  body["schedulingConfig"] = {{"spot", true}};
  body["tags"] = {"fw"};
  CreateNode("n1", body);
  Json node = Get(NodePath("n1")).json;
  EXPECT_EQ(node["schedulingConfig"], (Json{{"spot", true}}));
  EXPECT_EQ(node["tags"], (Json{"fw"}));
  EXPECT_EQ(node["networkConfig"]["network"], "projects/p/global/networks/default");
  EXPECT_EQ(node["networkConfig"]["subnetwork"],
            "projects/p/regions/us-central2/subnetworks/default");
  EXPECT_TRUE(std::regex_match(node["serviceAccount"]["email"].get<std::string>(),
                               std::regex("[0-9]{12}-compute@developer\\.gserviceaccount\\.com")));
  EXPECT_FALSE(node.contains("queuedResource"));
  EXPECT_FALSE(node.contains("multisliceNode"));
}

}  // namespace
}  // namespace tpufleet::emulator
