// Compute's projects.get and setCommonInstanceMetadata over HTTP, with the global
// operation a set returns (get, wait, list, delete).
#include "emulator/api_server.h"

#include "emulator/testing/api_fixture.h"

namespace tpufleet::emulator {
namespace {

class ComputeProjectsTest : public ApiFixture {
 protected:
  static constexpr const char* kProject = "/compute/v1/projects/p";
  static constexpr const char* kHost = "127.0.0.1:8471";

  Reply GetProject() { return Send("GET", kProject, "", {{"host", kHost}}); }
  Reply SetMetadata(const Json& body) {
    return Send("POST", std::string(kProject) + "/setCommonInstanceMetadata", body.dump(),
                {{"host", kHost}});
  }
  // The operation path of a compute#operation, relative to /compute/v1/.
  static std::string OpPath(const Json& op) {
    std::string link = op["selfLink"];
    return link.substr(link.find("/compute/v1/"));
  }
  static Json Items(const std::string& ssh_keys) {
    return Json::array({{{"key", "ssh-keys"}, {"value", ssh_keys}},
                        {{"key", "enable-oslogin"}, {"value", "FALSE"}}});
  }
};

TEST_F(ComputeProjectsTest, TheProjectShowsItsMetadataAndWhereItIs) {
  Reply r = GetProject();
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.json["kind"], "compute#project");
  EXPECT_EQ(r.json["name"], "p");
  EXPECT_EQ(r.json["selfLink"], "http://127.0.0.1:8471/compute/v1/projects/p");
  std::string number = r.json["id"];
  EXPECT_EQ(number.size(), 12u);
  EXPECT_EQ(r.json["defaultServiceAccount"], number + "-compute@developer.gserviceaccount.com");
  EXPECT_EQ(r.json["commonInstanceMetadata"]["kind"], "compute#metadata");
  EXPECT_FALSE(r.json["commonInstanceMetadata"].contains("items"));
  EXPECT_EQ(r.json["commonInstanceMetadata"]["fingerprint"].get<std::string>().size(), 12u);
  EXPECT_FALSE(r.json["quotas"].empty());
}

TEST_F(ComputeProjectsTest, ASetReachesEveryWorkerBeforeItsOperationIsDone) {
  std::string fingerprint = GetProject().json["commonInstanceMetadata"]["fingerprint"];
  Reply set = SetMetadata({{"fingerprint", fingerprint}, {"items", Items("alice:ssh-ed25519 AAAA a")}});
  ASSERT_EQ(set.status, 200) << set.text;
  EXPECT_EQ(set.json["kind"], "compute#operation");
  EXPECT_EQ(set.json["status"], "RUNNING");
  EXPECT_EQ(set.json["operationType"], "compute.projects.setCommonInstanceMetadata");
  EXPECT_EQ(set.json["targetLink"], "http://127.0.0.1:8471/compute/v1/projects/p");
  EXPECT_FALSE(set.json.contains("zone"));
  std::string op = OpPath(set.json);
  EXPECT_EQ(op.rfind("/compute/v1/projects/p/global/operations/operation-", 0), 0u) << op;
  EXPECT_EQ(Get(op).json["status"], "RUNNING");

  RunHostWork();
  EXPECT_EQ(hosts_->CallsStartingWith("SetProjectMetadata"),
            std::vector<std::string>{"SetProjectMetadata p keys=enable-oslogin,ssh-keys"});
  EXPECT_EQ(hosts_->project_metadata_of("p").at("ssh-keys"), "alice:ssh-ed25519 AAAA a");
  Reply done = Post(op + "/wait");
  EXPECT_EQ(done.json["status"], "DONE");
  EXPECT_FALSE(done.json.contains("error"));
  EXPECT_EQ(done.json["id"], Get(op).json["id"]);

  Json md = GetProject().json["commonInstanceMetadata"];
  EXPECT_NE(md["fingerprint"], fingerprint);
  EXPECT_EQ(md["items"], Items("alice:ssh-ed25519 AAAA a"));

  Reply list = Get(std::string(kProject) + "/global/operations");
  ASSERT_EQ(list.json["items"].size(), 1u);
  EXPECT_EQ(list.json["items"][0]["name"], done.json["name"]);
  EXPECT_EQ(Delete(op).status, 204);
  EXPECT_EQ(Get(op).status, 404);
}

TEST_F(ComputeProjectsTest, AStaleOrMissingFingerprintIsRefusedAndChangesNothing) {
  std::string first = GetProject().json["commonInstanceMetadata"]["fingerprint"];
  ASSERT_EQ(SetMetadata({{"fingerprint", first}, {"items", Items("a:ssh-ed25519 AAAA a")}}).status,
            200);
  for (const Json& body : {Json{{"fingerprint", first}, {"items", Items("b:ssh-ed25519 BBBB b")}},
                           Json{{"items", Items("b:ssh-ed25519 BBBB b")}}}) {
    Reply r = SetMetadata(body);
    EXPECT_EQ(r.status, 412);
    std::string message = "Supplied fingerprint does not match current metadata fingerprint.";
    EXPECT_EQ(r.json, ComputeErrorJson(412, "conditionNotMet", message));
  }
  EXPECT_EQ(GetProject().json["commonInstanceMetadata"]["items"], Items("a:ssh-ed25519 AAAA a"));
  // An unchanged set keeps the fingerprint; an empty one removes every item.
  std::string now = GetProject().json["commonInstanceMetadata"]["fingerprint"];
  ASSERT_EQ(SetMetadata({{"fingerprint", now}, {"items", Items("a:ssh-ed25519 AAAA a")}}).status,
            200);
  EXPECT_EQ(GetProject().json["commonInstanceMetadata"]["fingerprint"], now);
  ASSERT_EQ(SetMetadata({{"fingerprint", now}}).status, 200);
  Json md = GetProject().json["commonInstanceMetadata"];
  EXPECT_FALSE(md.contains("items"));
  EXPECT_EQ(md["fingerprint"], first);
}

TEST_F(ComputeProjectsTest, BadItemsAreRefusedWithComputesWords) {
  std::string fp = GetProject().json["commonInstanceMetadata"]["fingerprint"];
  Reply key = SetMetadata({{"fingerprint", fp}, {"items", {{{"key", "a b"}, {"value", "x"}}}}});
  EXPECT_EQ(key.status, 400);
  EXPECT_EQ(key.json["error"]["message"],
            "Invalid value for field 'resource.items[0].key': 'a b'. Must be a match of regex "
            "'[a-zA-Z0-9-_]{1,128}'");
  EXPECT_EQ(key.json["error"]["errors"][0]["reason"], "invalid");
  Reply dup = SetMetadata(
      {{"fingerprint", fp}, {"items", {{{"key", "k"}, {"value", "1"}}, {{"key", "k"}, {"value", "2"}}}}});
  EXPECT_EQ(dup.status, 400);
  Reply big = SetMetadata(
      {{"fingerprint", fp}, {"items", {{{"key", "k"}, {"value", std::string(256 * 1024 + 1, 'x')}}}}});
  EXPECT_EQ(big.status, 400);
  Reply json = Send("POST", std::string(kProject) + "/setCommonInstanceMetadata", "{nope");
  EXPECT_EQ(json.status, 400);
  EXPECT_EQ(json.json["error"]["errors"][0]["reason"], "parseError");
  EXPECT_TRUE(hosts_->CallsStartingWith("SetProjectMetadata").empty());
}

TEST_F(ComputeProjectsTest, AHostFailureFailsTheOperation) {
  hosts_->set_fail_project_metadata(InternalError("worker w-0 did not apply its metadata"));
  std::string fp = GetProject().json["commonInstanceMetadata"]["fingerprint"];
  Reply set = SetMetadata({{"fingerprint", fp}, {"items", Items("a:ssh-ed25519 AAAA a")}});
  RunHostWork();
  Json op = Get(OpPath(set.json)).json;
  EXPECT_EQ(op["status"], "DONE");
  EXPECT_EQ(op["httpErrorStatusCode"], 500);
  EXPECT_EQ(op["error"]["errors"][0]["code"], "INTERNAL_ERROR");
}

TEST_F(ComputeProjectsTest, WaitReturnsTheOperationStillRunningAtItsDeadline) {
  std::string fp = GetProject().json["commonInstanceMetadata"]["fingerprint"];
  Reply set = SetMetadata({{"fingerprint", fp}, {"items", Items("a:ssh-ed25519 AAAA a")}});
  // Nobody runs the host work: the operation cannot finish, and wait gives up.
  Reply waited = Post(OpPath(set.json) + "/wait");
  EXPECT_EQ(waited.status, 200);
  EXPECT_EQ(waited.json["status"], "RUNNING");
}

}  // namespace
}  // namespace tpufleet::emulator
