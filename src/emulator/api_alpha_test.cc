// v2alpha1 beside v2 (schema.h): the alpha-only fields gcloud's alpha track sends are
// accepted, stored and returned on /v2alpha1, refused on /v2 as Google refuses an unknown
// field, and never shown to a v2 client; NodeSpec.multiNodeParams is v2's
// multisliceParams; provisioningModel SPOT and bestEffort are preemptible.
#include "emulator/testing/api_fixture.h"

namespace tpufleet::emulator {
namespace {

class AlphaTest : public ApiFixture {
 protected:
  static constexpr const char* kAlphaParent = "/v2alpha1/projects/p/locations/us-central2-b";

  // What `gcloud alpha compute tpus tpu-vm create --autocheckpoint-enabled` sends, with
  // a boot disk and the alpha scheduling fields.
  static Json AlphaNodeBody() {
    Json body = NodeBody();
    body["autocheckpointEnabled"] = true;
    body["bootDiskConfig"] = {{"diskSizeGb", "200"}, {"enableConfidentialCompute", false}};
    body["schedulingConfig"] = {{"preemptible", false},
                                {"provisioningModel", "SPOT"},
                                {"reserved", false},
                                {"spot", false}};
    body["shieldedInstanceConfig"] = {{"enableSecureBoot", false}};
    return body;
  }

  Json QrBody(const Json& node_spec) {
    return Json{{"tpu", {{"nodeSpec", Json::array({node_spec})}}}};
  }
};

TEST_F(AlphaTest, AlphaFieldsAreStoredAndShownOnlyToAlphaClients) {
  Reply r = Post(std::string(kAlphaParent) + "/nodes?nodeId=a1", AlphaNodeBody());
  ASSERT_EQ(r.status, 200) << r.text;
  Json op = WaitOperation(r.json["name"]);
  EXPECT_EQ(op["response"]["@type"], "type.googleapis.com/google.cloud.tpu.v2alpha1.Node");
  EXPECT_EQ(op["response"]["autocheckpointEnabled"], true) << op.dump();

  Json alpha = Get(std::string(kAlphaParent) + "/nodes/a1").json;
  EXPECT_EQ(alpha["autocheckpointEnabled"], true);
  EXPECT_EQ(alpha["bootDiskConfig"]["diskSizeGb"], 200);
  EXPECT_EQ(alpha["schedulingConfig"]["provisioningModel"], "SPOT");
  EXPECT_EQ(alpha["apiVersion"], "V2_ALPHA1");

  Json v2 = Get(NodePath("a1")).json;
  EXPECT_EQ(v2["state"], "READY");
  EXPECT_EQ(v2["apiVersion"], "V2_ALPHA1");
  EXPECT_FALSE(v2.contains("autocheckpointEnabled")) << v2.dump();
  EXPECT_FALSE(v2["bootDiskConfig"].contains("diskSizeGb")) << v2.dump();
  EXPECT_FALSE(v2["schedulingConfig"].contains("provisioningModel")) << v2.dump();
  Json listed = Get(std::string(kParent) + "/nodes").json["nodes"][0];
  EXPECT_EQ(listed, v2);
  EXPECT_EQ(Get(std::string(kAlphaParent) + "/nodes").json["nodes"][0], alpha);

  // A v2 node read through v2alpha1 says which version made it.
  CreateNode("g1");
  EXPECT_EQ(Get(std::string(kAlphaParent) + "/nodes/g1").json["apiVersion"], "V2");
}

TEST_F(AlphaTest, V2RefusesAlphaFieldsAsUnknown) {
  Reply r = Post(std::string(kParent) + "/nodes?nodeId=a1", AlphaNodeBody());
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json["error"]["message"],
            "Invalid JSON payload received. Unknown name \"autocheckpointEnabled\" at 'node': "
            "Cannot find field.");
  Json body = NodeBody();
  body["schedulingConfig"] = {{"provisioning_model", "SPOT"}};
  r = Post(std::string(kParent) + "/nodes?nodeId=a1", body);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json["error"]["message"],
            "Invalid JSON payload received. Unknown name \"provisioning_model\" at "
            "'node.scheduling_config': Cannot find field.");
}

TEST_F(AlphaTest, AlphaEnumsAndIntegersAreChecked) {
  Json body = NodeBody();
  body["schedulingConfig"] = {{"provisioningModel", "CHEAP"}};
  Reply r = Post(std::string(kAlphaParent) + "/nodes?nodeId=a1", body);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json["error"]["message"],
            "Invalid value at 'node.scheduling_config.provisioning_model' (TYPE_ENUM), \"CHEAP\"");
  body = NodeBody();
  body["bootDiskConfig"] = {{"diskSizeGb", "lots"}};
  r = Post(std::string(kAlphaParent) + "/nodes?nodeId=a1", body);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json["error"]["message"],
            "Invalid value at 'node.boot_disk_config.disk_size_gb' (TYPE_INT64), \"lots\"");
}

TEST_F(AlphaTest, QueuedResourceAlphaFields) {
  std::string parent = std::string("projects/p/locations/") + kZone;
  // What gcloud alpha sends for `queued-resources create --spot`: spot and a
  // provisioning model of STANDARD, side by side.
  Json qr = QrBody({{"parent", parent},
                    {"multiNodeParams",
                     {{"nodeCount", 2}, {"nodeIdPrefix", "ms"}, {"workloadType", "THROUGHPUT_OPTIMIZED"}}},
                    {"node", NodeBody()}});
  qr["spot"] = Json::object();
  qr["provisioningModel"] = "STANDARD";
  qr["runDuration"] = {{"maxRunDuration", "3600s"}};
  Reply r = Post(std::string(kAlphaParent) + "/queuedResources?queuedResourceId=q1", qr);
  ASSERT_EQ(r.status, 200) << r.text;
  Json op = WaitOperation(r.json["name"]);
  EXPECT_EQ(op["response"]["@type"],
            "type.googleapis.com/google.cloud.tpu.v2alpha1.QueuedResource");
  for (int i = 0; i < 600 && Get(std::string(kParent) + "/queuedResources/q1")
                                     .json["state"]
                                     .value("state", "") != "ACTIVE";
       ++i) {
    Pass(milliseconds(100));
  }
  Json alpha = Get(std::string(kAlphaParent) + "/queuedResources/q1").json;
  EXPECT_EQ(alpha["state"]["state"], "ACTIVE");
  EXPECT_EQ(alpha["runDuration"]["maxRunDuration"], "3600s");
  EXPECT_EQ(alpha["provisioningModel"], "STANDARD");
  EXPECT_EQ(alpha["tpu"]["nodeSpec"][0]["multiNodeParams"]["workloadType"], "THROUGHPUT_OPTIMIZED");
  Json v2 = Get(std::string(kParent) + "/queuedResources/q1").json;
  EXPECT_FALSE(v2.contains("runDuration")) << v2.dump();
  EXPECT_FALSE(v2.contains("provisioningModel")) << v2.dump();
  EXPECT_EQ(v2["tpu"]["nodeSpec"][0]["multisliceParams"], (Json{{"nodeCount", 2}, {"nodeIdPrefix", "ms"}}));
  Json node = Get(NodePath("ms-1")).json;
  EXPECT_EQ(node["multisliceNode"], true) << node.dump();
  EXPECT_EQ(node["schedulingConfig"]["spot"], true) << node.dump();

  // v2 knows no multiNodeParams; the tier stays one of spot, guaranteed, bestEffort.
  r = Post(std::string(kParent) + "/queuedResources?queuedResourceId=q2",
           QrBody({{"parent", parent}, {"multiNodeParams", {{"nodeCount", 2}}}, {"node", NodeBody()}}));
  EXPECT_EQ(r.status, 400) << r.text;
  Json both = QrBody({{"parent", parent}, {"nodeId", "n3"}, {"node", NodeBody()}});
  both["spot"] = Json::object();
  both["bestEffort"] = Json::object();
  r = Post(std::string(kAlphaParent) + "/queuedResources?queuedResourceId=q3", both);
  EXPECT_EQ(r.status, 400) << r.text;
  EXPECT_EQ(r.json["error"]["message"],
            "Invalid value at 'queued_resource': spot, guaranteed and best_effort are mutually "
            "exclusive.");
}

}  // namespace
}  // namespace tpufleet::emulator
