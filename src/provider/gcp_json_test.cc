#include "provider/gcp_json.h"

#include <gtest/gtest.h>

#include "util/testing/status_printer.h"
#include "util/timestamp.h"

namespace tpufleet {
namespace {

using Json = nlohmann::json;

CreateNodeRequest Request() {
  CreateNodeRequest r;
  r.zone = "us-central2-b";
  r.node_id = "trainer";
  r.type = "v4-32";
  r.runtime_version = "tpu-ubuntu2204-base";
  return r;
}

TEST(GcpJson, NodeBodyOfAnOnDemandNode) {
  EXPECT_EQ(NodeBody(Request(), false), (Json{{"acceleratorType", "v4-32"},
                                              {"runtimeVersion", "tpu-ubuntu2204-base"},
                                              {"labels", Json::object()},
                                              {"metadata", Json::object()},
                                              {"networkConfig", {{"enableExternalIps", true}}}}));
}

TEST(GcpJson, NodeBodyCarriesCapacityLabelsMetadataAndDisks) {
  CreateNodeRequest r = Request();
  r.capacity = Capacity::kSpot;
  r.labels = {{"fleet", "lab"}};
  r.metadata = {{"ssh-keys", "alice:ssh-ed25519 AAAA alice"}};
  r.data_disks.resize(2);
  r.data_disks[0].source = "projects/p/zones/us-central2-b/disks/d1";
  r.data_disks[1].source = "projects/p/zones/us-central2-b/disks/d2";
  r.data_disks[1].mode = DiskMode::kReadWrite;
  Json body = NodeBody(r, false);
  EXPECT_EQ(body["schedulingConfig"], (Json{{"spot", true}}));
  EXPECT_EQ(body["labels"], (Json{{"fleet", "lab"}}));
  EXPECT_EQ(body["metadata"], (Json{{"ssh-keys", "alice:ssh-ed25519 AAAA alice"}}));
  EXPECT_EQ(
      body["dataDisks"],
      (Json::array(
          {{{"sourceDisk", "projects/p/zones/us-central2-b/disks/d1"}, {"mode", "READ_ONLY"}},
           {{"sourceDisk", "projects/p/zones/us-central2-b/disks/d2"}, {"mode", "READ_WRITE"}}})));
  r.capacity = Capacity::kReserved;
  EXPECT_EQ(NodeBody(r, false)["schedulingConfig"], (Json{{"reserved", true}}));
  // In a queued resource, spot is the resource's tier.
  r.capacity = Capacity::kSpot;
  EXPECT_FALSE(NodeBody(r, true).contains("schedulingConfig"));
}

TEST(GcpJson, QueuedResourceBody) {
  CreateNodeRequest r = Request();
  r.capacity = Capacity::kSpot;
  r.queued = QueuedSpec{std::chrono::hours(2)};
  Json body = QueuedResourceBody(r, "projects/p/locations/us-central2-b");
  EXPECT_EQ(body,
            (Json{{"tpu",
                   {{"nodeSpec", Json::array({{{"parent", "projects/p/locations/us-central2-b"},
                                               {"nodeId", "trainer"},
                                               {"node", NodeBody(r, true)}}})}}},
                  {"spot", Json::object()},
                  {"queueingPolicy", {{"validUntilDuration", "7200s"}}}}));
  r.capacity = Capacity::kOnDemand;
  r.queued = QueuedSpec{};
  body = QueuedResourceBody(r, "projects/p/locations/us-central2-b");
  EXPECT_FALSE(body.contains("spot"));
  EXPECT_FALSE(body.contains("guaranteed"));
  EXPECT_FALSE(body.contains("queueingPolicy"));
}

// A state the API adds after this build is no error: it is kept for display and
// treated as no state tpufleet can act on.
TEST(Issue11, ANodeStateThisBuildDoesNotKnowIsKeptAsText) {
  Json node = {{"name", "projects/p/locations/us-central2-b/nodes/trainer"},
               {"state", "MIGRATING"}};
  CloudNode n = ParseNode(node).value();
  EXPECT_EQ(n.state.value(), NodeState::kUnknown);
  EXPECT_EQ(n.state.Name(), "MIGRATING");
}

TEST(GcpJson, ParseNode) {
  Json node = {
      {"name", "projects/p/locations/us-central2-b/nodes/trainer"},
      {"acceleratorType", "v4-32"},
      {"runtimeVersion", "tpu-ubuntu2204-base"},
      {"state", "READY"},
      {"health", "HEALTHY"},
      {"schedulingConfig", {{"spot", true}}},
      {"queuedResource", "projects/p/locations/us-central2-b/queuedResources/trainer"},
      {"labels", {{"fleet", "lab"}}},
      {"metadata", {{"ssh-keys", "k"}}},
      {"createTime", "2026-01-01T00:00:01.500Z"},
      {"dataDisks",
       Json::array({{{"sourceDisk", "projects/p/zones/us-central2-b/disks/data"},
                     {"mode", "READ_ONLY"}},
                    {{"sourceDisk", "projects/p/zones/us-central2-b/disks/ckpt"},
                     {"mode", "READ_WRITE"}},
                    {{"sourceDisk", "projects/p/zones/us-central2-b/disks/plain"}}})},
      {"networkEndpoints",
       Json::array({{{"ipAddress", "10.0.0.2"}, {"accessConfig", {{"externalIp", "35.1.2.3"}}}},
                    {{"ipAddress", "10.0.0.3"}}})},
      {"someFutureField", {{"x", 1}}}};
  CloudNode n = ParseNode(node).value();
  EXPECT_EQ(n.id, "trainer");
  EXPECT_EQ(n.zone, "us-central2-b");
  EXPECT_EQ(n.cloud_name, "projects/p/locations/us-central2-b/nodes/trainer");
  EXPECT_EQ(n.type, "v4-32");
  EXPECT_EQ(n.runtime_version, "tpu-ubuntu2204-base");
  EXPECT_EQ(n.state, NodeState::kReady);
  EXPECT_EQ(n.health, "HEALTHY");
  EXPECT_EQ(n.capacity, Capacity::kSpot);
  EXPECT_EQ(n.queued_resource, "projects/p/locations/us-central2-b/queuedResources/trainer");
  EXPECT_EQ(n.labels, (std::map<std::string, std::string>{{"fleet", "lab"}}));
  EXPECT_EQ(n.metadata, (std::map<std::string, std::string>{{"ssh-keys", "k"}}));
  ASSERT_EQ(n.workers.size(), 2u);
  EXPECT_EQ(n.workers[0].address, "10.0.0.2");
  EXPECT_EQ(n.workers[0].external_address, "35.1.2.3");
  EXPECT_EQ(n.workers[1].index, 1);
  EXPECT_EQ(n.workers[1].external_address, "");
  EXPECT_EQ(n.create_time, ParseTimestamp("2026-01-01T00:00:01.500Z").value());
  EXPECT_EQ(n.data_disks,
            (std::vector<NodeDisk>{{"projects/p/zones/us-central2-b/disks/data", "read-only"},
                                     {"projects/p/zones/us-central2-b/disks/ckpt", "read-write"},
                                     {"projects/p/zones/us-central2-b/disks/plain", "read-write"}}));
}

TEST(GcpJson, ParseNodeCapacityAndMinimalNodes) {
  Json node = {{"name", "projects/p/locations/z/nodes/n"}};
  CloudNode n = ParseNode(node).value();
  EXPECT_EQ(n.capacity, Capacity::kOnDemand);
  EXPECT_TRUE(n.workers.empty());
  EXPECT_FALSE(n.create_time.has_value());
  node["schedulingConfig"] = {{"preemptible", true}};
  EXPECT_EQ(ParseNode(node)->capacity, Capacity::kSpot);
  node["schedulingConfig"] = {{"reserved", true}};
  EXPECT_EQ(ParseNode(node)->capacity, Capacity::kReserved);
  for (const char* bad : {"", "nodes/n", "projects/p/locations/z/queuedResources/n",
                          "projects/p/locations/z/nodes/"}) {
    EXPECT_EQ(ParseNode({{"name", bad}}).status().code(), StatusCode::kInternal) << bad;
  }
}

TEST(GcpJson, ParseQueuedResource) {
  Json qr = {{"name", "projects/p/locations/z/queuedResources/trainer"},
             {"tpu",
              {{"nodeSpec",
                Json::array({{{"parent", "projects/p/locations/z"}, {"nodeId", "trainer"}}})}}},
             {"state", {{"state", "WAITING_FOR_RESOURCES"}}}};
  CloudQueuedResource q = ParseQueuedResource(qr).value();
  EXPECT_EQ(q.id, "trainer");
  EXPECT_EQ(q.zone, "z");
  EXPECT_EQ(q.state, NodeState::kWaitingForResources);
  EXPECT_TRUE(q.failure.ok());
  EXPECT_EQ(q.node_ids, std::vector<std::string>{"trainer"});

  qr["tpu"]["nodeSpec"] =
      Json::array({{{"multisliceParams", {{"nodeCount", 2}, {"nodeIdPrefix", "np"}}}},
                   {{"multisliceParams", {{"nodeCount", 2}}}}});
  qr["state"] = {{"state", "FAILED"},
                 {"failedData", {{"error", {{"code", 8}, {"message", "no capacity"}}}}}};
  q = ParseQueuedResource(qr).value();
  EXPECT_EQ(q.node_ids, (std::vector<std::string>{"np-0", "np-1", "trainer-0", "trainer-1"}));
  EXPECT_EQ(q.failure, ResourceExhaustedError("no capacity"));
  qr["state"] = {{"state", "FAILED"}};
  EXPECT_EQ(ParseQueuedResource(qr)->failure.code(), StatusCode::kFailedPrecondition);
}

TEST(GcpJson, ParseOperation) {
  Json op = {{"name", "projects/p/locations/z/operations/operation-1"}, {"done", false}};
  CloudOperation o = ParseOperation(op).value();
  EXPECT_EQ(o.name, "projects/p/locations/z/operations/operation-1");
  EXPECT_FALSE(o.done);
  EXPECT_TRUE(o.error.ok());
  op["done"] = true;
  op["response"] = {{"@type", "type.googleapis.com/google.cloud.tpu.v2.Node"}};
  EXPECT_TRUE(ParseOperation(op)->done);
  EXPECT_TRUE(ParseOperation(op)->error.ok());
  op.erase("response");
  op["error"] = {{"code", 8}, {"message", "There is no more capacity in the zone \"z\""}};
  EXPECT_EQ(ParseOperation(op)->error,
            ResourceExhaustedError("There is no more capacity in the zone \"z\""));
  EXPECT_EQ(ParseOperation(Json::object()).status().code(), StatusCode::kInternal);
}

TEST(GcpJson, ParseGuestAttributes) {
  Json answer = {
      {"guestAttributes",
       Json::array(
           {{{"queryPath", "/"},
             {"queryValue",
              {{"items",
                Json::array(
                    {{{"namespace", "hostkeys"}, {"key", "ssh-rsa"}, {"value", "R"}},
                     {{"namespace", "hostkeys"}, {"key", "ssh-ed25519"}, {"value", "AAAAC3"}},
                     {{"key", "hostname"}, {"value", "t1v-n-1-w-0"}}})}}}},
            {{"queryPath", "/"},
             {"queryValue",
              {{"items", Json::array({{{"key", "hostname"}, {"value", "w1"}}})}}}}})}};
  std::vector<WorkerIdentity> ids = ParseGuestAttributes(answer).value();
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids[0].index, 0);
  EXPECT_EQ(ids[0].host_key, "ssh-ed25519 AAAAC3");
  EXPECT_EQ(ids[0].hostname, "t1v-n-1-w-0");
  EXPECT_EQ(ids[1].index, 1);
  EXPECT_EQ(ids[1].host_key, "");
  EXPECT_EQ(ids[1].hostname, "w1");
  EXPECT_TRUE(ParseGuestAttributes(Json::object())->empty());
}

// ---- Issue 10: counts a broken or hostile API chooses ----

Json MultisliceQr(Json count) {
  return {{"name", "projects/p/locations/z/queuedResources/big"},
          {"tpu",
           {{"nodeSpec", Json::array({{{"multisliceParams", {{"nodeCount", std::move(count)}}}}})}}},
          {"state", {{"state", "ACCEPTED"}}}};
}

TEST(Issue10, AHugeNodeCountIsRefusedNotLoopedOver) {
  // 100000 first: without a cap that returns (quickly) 100000 ids; 2^31-1 would not return.
  Result<CloudQueuedResource> q = ParseQueuedResource(MultisliceQr(100000));
  ASSERT_FALSE(q.ok()) << q->node_ids.size() << " node ids";
  EXPECT_EQ(q.status().code(), StatusCode::kInternal);
  EXPECT_EQ(q.status().message(),
            "the TPU API returned queued resource projects/p/locations/z/queuedResources/big "
            "with multisliceParams.nodeCount 100000; tpufleet accepts 1 to 1024 nodes in one "
            "queued resource");
  for (const Json& bad : {Json(2147483647), Json(uint64_t{1} << 63), Json(-1), Json(0),
                          Json("99999999999"), Json("x"), Json(2.5)}) {
    EXPECT_EQ(ParseQueuedResource(MultisliceQr(bad)).status().code(), StatusCode::kInternal)
        << bad.dump();
  }
  // The limit itself, as a number or an int64-style string, is fine.
  EXPECT_EQ(ParseQueuedResource(MultisliceQr(1024))->node_ids.size(), 1024u);
  EXPECT_EQ(ParseQueuedResource(MultisliceQr("3"))->node_ids.size(), 3u);
}

TEST(Issue10, NodeSpecsMayNotAddUpPastTheLimit) {
  Json qr = MultisliceQr(600);
  qr["tpu"]["nodeSpec"].push_back({{"multisliceParams", {{"nodeCount", 600}}}});
  EXPECT_EQ(ParseQueuedResource(qr).status().code(), StatusCode::kInternal);
  // Many single-node specs count too.
  Json many = MultisliceQr(1);
  many["tpu"]["nodeSpec"] = Json::array();
  for (int i = 0; i < 1025; ++i) {
    many["tpu"]["nodeSpec"].push_back({{"nodeId", "n" + std::to_string(i)}});
  }
  EXPECT_EQ(ParseQueuedResource(many).status().code(), StatusCode::kInternal);
}

TEST(Issue10, TooManyWorkersAreRefused) {
  Json node = {{"name", "projects/p/locations/z/nodes/n"}, {"networkEndpoints", Json::array()}};
  Json answer = {{"guestAttributes", Json::array()}};
  for (size_t i = 0; i <= kMaxWorkersPerNode; ++i) {
    node["networkEndpoints"].push_back({{"ipAddress", "10.0.0.1"}});
    answer["guestAttributes"].push_back(Json::object());
  }
  Result<CloudNode> n = ParseNode(node);
  EXPECT_EQ(n.status().code(), StatusCode::kInternal);
  EXPECT_NE(n.status().message().find("8193 networkEndpoints in projects/p/locations/z/nodes/n"),
            std::string::npos)
      << n.status().message();
  EXPECT_EQ(ParseGuestAttributes(answer).status().code(), StatusCode::kInternal);
  node["networkEndpoints"].erase(node["networkEndpoints"].size() - 1);
  EXPECT_EQ(ParseNode(node)->workers.size(), kMaxWorkersPerNode);
}

}  // namespace
}  // namespace tpufleet
