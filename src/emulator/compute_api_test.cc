// The Compute Engine API v1 over HTTP (ApiServer::Handle): routing, Compute's error
// envelope, operations, faults.
#include "emulator/api_server.h"

#include <set>

#include "emulator/testing/api_fixture.h"

namespace tpufleet::emulator {
namespace {

class ComputeApiTest : public ApiFixture {
 protected:
  static constexpr const char* kCompute = "/compute/v1/projects/p";
  Reply Inject(const Json& fault) { return Post("/emulator/v1/faults", fault); }
};

TEST_F(ComputeApiTest, AnUnknownOperationIsNotFoundInComputesEnvelope) {
  Reply r = Get(std::string(kCompute) + "/global/operations/operation-1");
  EXPECT_EQ(r.status, 404);
  std::string message = "The resource 'projects/p/global/operations/operation-1' was not found";
  EXPECT_EQ(r.json, ComputeErrorJson(404, "notFound", message));
  EXPECT_EQ(Post(std::string(kCompute) + "/zones/us-central2-b/operations/x/wait").status, 404);
  EXPECT_EQ(Delete(std::string(kCompute) + "/zones/us-central2-b/operations/x").status, 404);
  Reply unknown = Get(std::string(kCompute) + "/global/frobs");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.json["error"]["errors"][0]["reason"], "notFound");
}

TEST_F(ComputeApiTest, EmptyOperationListsAreComputeLists) {
  Send("GET", std::string(kCompute) + "/global/operations", "", {{"host", "127.0.0.1:9"}});
  Reply r = Send("GET", std::string(kCompute) + "/zones/us-central2-b/operations", "",
                 {{"host", "127.0.0.1:9"}});
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.json, (Json{{"kind", "compute#operationList"},
                          {"id", "projects/p/zones/us-central2-b/operations"},
                          {"items", Json::array()},
                          {"selfLink",
                           "http://127.0.0.1:9/compute/v1/projects/p/zones/us-central2-b/"
                           "operations"}}));
  EXPECT_EQ(Get(std::string(kCompute) + "/global/operations?maxResults=501").status, 400);
  // Empty path segments are skipped, as for the TPU API.
  EXPECT_EQ(Get("//compute/v1//projects/p/global/operations").status, 200);
}

TEST_F(ComputeApiTest, OperationListsComeInPagesOfMaxResults) {
  std::string zone = std::string(kCompute) + "/zones/us-central2-b";
  for (const char* name : {"d1", "d2", "d3"}) {
    ASSERT_EQ(Post(zone + "/disks", Json{{"name", name}, {"sizeGb", "10"}}).status, 200) << name;
  }
  Reply first = Get(zone + "/operations?maxResults=2");
  ASSERT_EQ(first.status, 200) << first.text;
  ASSERT_EQ(first.json["items"].size(), 2u);
  ASSERT_TRUE(first.json.contains("nextPageToken")) << first.text;
  Reply second = Get(zone + "/operations?maxResults=2&pageToken=" +
                     first.json["nextPageToken"].get<std::string>());
  ASSERT_EQ(second.status, 200) << second.text;
  ASSERT_EQ(second.json["items"].size(), 1u);
  EXPECT_FALSE(second.json.contains("nextPageToken"));
  EXPECT_EQ(second.json["kind"], "compute#operationList");
  std::set<std::string> targets;
  for (const Reply* r : {&first, &second}) {
    for (const Json& op : r->json["items"]) {
      targets.insert(op["targetLink"].get<std::string>().substr(
          op["targetLink"].get<std::string>().rfind('/') + 1));
    }
  }
  EXPECT_EQ(targets, (std::set<std::string>{"d1", "d2", "d3"}));
}

TEST_F(ComputeApiTest, UnknownZonesAndForeignProjectsAreRefusedAsComputeDoes) {
  Reply zone = Get(std::string(kCompute) + "/zones/mars-north1-a/operations");
  EXPECT_EQ(zone.status, 400);
  EXPECT_EQ(zone.json["error"]["message"],
            "Invalid value for field 'zone': 'mars-north1-a'. Unknown zone.");
  EXPECT_EQ(zone.json["error"]["errors"][0]["reason"], "invalid");
  Reply project = Get("/compute/v1/projects/Not_A_Project/global/operations");
  EXPECT_EQ(project.status, 403);
  EXPECT_EQ(project.json["error"]["errors"][0]["reason"], "forbidden");
  EXPECT_EQ(project.json["error"]["message"],
            "Required 'compute.globalOperations.list' permission for 'projects/Not_A_Project'");
  // The token is checked before anything else, as for the TPU API.
  EXPECT_EQ(GetStatusAs(std::string(kCompute) + "/global/operations", ""), 401);
}

TEST_F(ComputeApiTest, DeniedAndStormFaultsAnswerInComputesWords) {
  ASSERT_EQ(Inject({{"kind", "denied"}, {"duration", "10s"}}).status, 200);
  Reply denied = Get(std::string(kCompute) + "/zones/us-central2-b/operations");
  EXPECT_EQ(denied.status, 403);
  EXPECT_EQ(denied.json["error"]["message"],
            "Required 'compute.zoneOperations.list' permission for "
            "'projects/p/zones/us-central2-b/operations'");
  Delete("/emulator/v1/faults");
  ASSERT_EQ(Inject({{"kind", "storm"}, {"rate", 1.0}, {"httpCodes", {429}}}).status, 200);
  Reply storm = Get(std::string(kCompute) + "/global/operations");
  EXPECT_EQ(storm.status, 429);
  EXPECT_EQ(storm.json["error"]["errors"][0]["reason"], "rateLimitExceeded");
  EXPECT_NE(storm.json["error"]["message"].get<std::string>().find("compute.googleapis.com"),
            std::string::npos);
  Delete("/emulator/v1/faults");
  EXPECT_EQ(Get(std::string(kCompute) + "/global/operations").status, 200);
}

}  // namespace
}  // namespace tpufleet::emulator
