// Bad input gets what Google gives it: 400 INVALID_ARGUMENT, never a 500 from a field of
// the wrong shape deep in a handler. Issue 11 asked for this sweep; every case here
// already got 400, so these guard it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "emulator/testing/api_fixture.h"

namespace tpufleet::emulator {
namespace {

class BadInputTest : public ApiFixture {};

TEST_F(BadInputTest, FieldsOfTheWrongShapeAre400Not500) {
  struct Case {
    std::string what;
    Json body;
  };
  std::vector<Case> cases;
  auto with = [&](const std::string& what, const std::string& field, Json value) {
    Json body = NodeBody();
    body[field] = std::move(value);
    cases.push_back({what, body});
  };
  with("acceleratorConfig a string", "acceleratorConfig", "v4");
  with("acceleratorConfig.type a number out of range", "acceleratorConfig",
       Json{{"type", 99}, {"topology", "2x2x1"}});
  with("acceleratorConfig.topology a number", "acceleratorConfig",
       Json{{"type", "V4"}, {"topology", 7}});
  with("schedulingConfig.spot a string", "schedulingConfig", Json{{"spot", "yes"}});
  with("schedulingConfig a list", "schedulingConfig", Json::array({1, 2}));
  with("metadata a value that is a number", "metadata", Json{{"startup-script", 1}});
  with("metadata a list", "metadata", Json::array({"a"}));
  with("labels a value that is a number", "labels", Json{{"env", 1}});
  with("dataDisks a disk that is a string", "dataDisks", Json::array({"disk"}));
  with("dataDisks a mode that is a list", "dataDisks",
       Json::array({Json{{"sourceDisk", "d"}, {"mode", Json::array()}}}));
  with("networkConfig a string", "networkConfig", "default");
  with("networkConfigs a list of strings", "networkConfigs", Json::array({"x"}));
  with("tags a string", "tags", "t");
  with("shieldedInstanceConfig.enableSecureBoot a string", "shieldedInstanceConfig",
       Json{{"enableSecureBoot", "on"}});
  int n = 0;
  for (const Case& c : cases) {
    Reply r = Post(std::string(kParent) + "/nodes?nodeId=n" + std::to_string(n++), c.body);
    EXPECT_EQ(r.status, 400) << c.what << ": " << r.text;
    EXPECT_EQ(r.json["error"].value("status", ""), "INVALID_ARGUMENT") << c.what << ": " << r.text;
  }
}

TEST_F(BadInputTest, BadRequestsToOtherRoutesAre400Not500) {
  CreateNode("n1");
  struct Case {
    std::string method, path, body;
  };
  const std::string qr = std::string(kParent) + "/queuedResources?queuedResourceId=";
  std::vector<Case> cases = {
      {"POST", NodePath("n1") + ":getGuestAttributes", R"({"workerIds": "0"})"},
      {"POST", NodePath("n1") + ":getGuestAttributes", R"({"workerIds": [0]})"},
      {"POST", NodePath("n1") + ":getGuestAttributes", R"({"queryPath": 5})"},
      {"POST", NodePath("n1") + ":getGuestAttributes", R"([1])"},
      {"PATCH", NodePath("n1") + "?updateMask=metadata", R"({"metadata": {"k": 1}})"},
      {"PATCH", NodePath("n1") + "?updateMask=labels", R"({"labels": "x"})"},
      {"PATCH", NodePath("n1") + "?updateMask=metadata", R"("x")"},
      {"GET", std::string(kParent) + "/nodes?pageSize=abc", ""},
      {"GET", std::string(kParent) + "/nodes?pageSize=99999999999999999999", ""},
      {"GET", std::string(kParent) + "/nodes?pageToken=%ff%fe", ""},
      {"POST", qr + "q1", R"({"tpu": "x"})"},
      {"POST", qr + "q2", R"({"tpu": {"nodeSpec": "x"}})"},
      {"POST", qr + "q3", R"({"tpu": {"nodeSpec": [{"node": "x"}]}})"},
      {"POST", qr + "q4", R"({"tpu": {"nodeSpec": [{"parent": 1, "nodeId": "a", "node": {}}]}})"},
      {"POST", qr + "q5", R"({"tpu": {"nodeSpec": [5]}})"},
      {"POST", qr + "q6", R"({"spot": "yes", "tpu": {"nodeSpec": []}})"},
      {"POST", qr + "q7", R"({"queueingPolicy": {"validUntilDuration": 5}})"},
      {"POST", qr + "q8", R"({"queueingPolicy": {"validUntilDuration": "forever"}})"},
      {"POST", qr + "q9", R"({"queueingPolicy": {"validAfterTime": "yesterday"}})"},
  };
  for (const Case& c : cases) {
    Reply r = Send(c.method, c.path, c.body);
    EXPECT_EQ(r.status, 400) << c.method << " " << c.path << " " << c.body << ": " << r.text;
  }
}

// Every field of a node, in every wrong shape, in a create and in a patch of it.
TEST_F(BadInputTest, NoShapeOfAnyNodeFieldIsA500) {
  CreateNode("n1");
  const std::vector<std::string> fields = {
      "name", "description", "acceleratorType", "state", "runtimeVersion", "networkConfig",
      "networkConfigs", "cidrBlock", "serviceAccount", "createTime", "schedulingConfig",
      "networkEndpoints", "health", "labels", "metadata", "tags", "id", "dataDisks",
      "apiVersion", "symptoms", "shieldedInstanceConfig", "acceleratorConfig",
      "queuedResource", "multisliceNode", "upcomingMaintenance", "bootDiskConfig"};
  const std::vector<Json> shapes = {Json("x"), Json(7), Json(-1.5), Json(true),
                                    Json::array({1, "a", nullptr}), Json::object({{"a", 1}}),
                                    Json::array({Json::object({{"a", Json::array()}})})};
  int n = 0;
  for (const std::string& field : fields) {
    for (const Json& shape : shapes) {
      Json body = NodeBody();
      body[field] = shape;
      Reply created = Post(std::string(kParent) + "/nodes?nodeId=x" + std::to_string(n++), body);
      EXPECT_LT(created.status, 500) << "create, " << field << " = " << shape.dump() << ": "
                                     << created.text;
      Reply patched = Patch(NodePath("n1") + "?updateMask=" + field, Json{{field, shape}});
      EXPECT_LT(patched.status, 500) << "patch, " << field << " = " << shape.dump() << ": "
                                     << patched.text;
    }
  }
}

// The fields inside a node's messages, and a queued resource's node, in wrong shapes.
TEST_F(BadInputTest, NoShapeOfANestedFieldIsA500) {
  CreateNode("n1");
  const std::vector<std::pair<std::string, std::string>> nested = {
      {"acceleratorConfig", "type"},     {"acceleratorConfig", "topology"},
      {"schedulingConfig", "spot"},      {"schedulingConfig", "preemptible"},
      {"schedulingConfig", "reserved"},  {"networkConfig", "network"},
      {"networkConfig", "subnetwork"},   {"networkConfig", "enableExternalIps"},
      {"networkConfig", "canIpForward"}, {"networkConfig", "queueCount"},
      {"serviceAccount", "email"},       {"serviceAccount", "scope"},
      {"shieldedInstanceConfig", "enableSecureBoot"},
      {"bootDiskConfig", "enableConfidentialCompute"}};
  const std::vector<Json> shapes = {Json("x"), Json(7), Json(true), Json::array({1}),
                                    Json::object({{"a", 1}}), Json(nullptr)};
  int n = 0;
  for (const auto& [outer, inner] : nested) {
    for (const Json& shape : shapes) {
      Json body = NodeBody();
      body[outer] = Json{{inner, shape}};
      if (outer == "acceleratorConfig") {
        body.erase("acceleratorType");
      }
      std::string id = "x" + std::to_string(n++);
      Reply r = Post(std::string(kParent) + "/nodes?nodeId=" + id, body);
      EXPECT_LT(r.status, 500) << outer << "." << inner << " = " << shape.dump() << ": " << r.text;
      Json node = body;
      Json qr{{"tpu", {{"nodeSpec", Json::array({Json{{"parent", std::string(kParent).substr(4)},
                                                       {"nodeId", "q" + id},
                                                       {"node", node}}})}}}};
      r = Post(std::string(kParent) + "/queuedResources?queuedResourceId=q" + id, qr);
      EXPECT_LT(r.status, 500) << "queued " << outer << "." << inner << " = " << shape.dump()
                               << ": " << r.text;
      r = Patch(NodePath("n1") + "?updateMask=" + outer + "." + inner, Json{{outer, {{inner, shape}}}});
      EXPECT_LT(r.status, 500) << "patch " << outer << "." << inner << ": " << r.text;
    }
  }
  for (const Json& shape : {Json("x"), Json(7), Json::array({1}), Json::object({{"a", 1}})}) {
    Json body = NodeBody();
    body["dataDisks"] = Json::array({Json{{"sourceDisk", shape}, {"mode", shape}}});
    Reply r = Post(std::string(kParent) + "/nodes?nodeId=d" + std::to_string(n++), body);
    EXPECT_LT(r.status, 500) << "dataDisks " << shape.dump() << ": " << r.text;
    for (const char* route : {":start", ":stop", ":getGuestAttributes"}) {
      r = Send("POST", NodePath("n1") + route, shape.dump());
      EXPECT_LT(r.status, 500) << route << " " << shape.dump() << ": " << r.text;
    }
  }
}

}  // namespace
}  // namespace tpufleet::emulator
