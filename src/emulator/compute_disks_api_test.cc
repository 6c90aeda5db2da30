// Compute Engine disks and diskTypes over HTTP (ApiServer::Handle): what gcloud compute
// disks create/describe/list/delete and googleapis' compute('v1') see.
#include <sys/stat.h>

#include <regex>

#include "emulator/compute_disks.h"
#include "emulator/testing/compute_disks_fixture.h"

namespace tpufleet::emulator {
namespace {

class DisksApiTest : public DiskFixture {};

TEST_F(DisksApiTest, InsertAnswersWithAZoneOperationAndTheDiskTurnsReady) {
  Reply r = Send("POST", kDisks, Json{{"name", "data"}, {"type", "pd-ssd"}, {"sizeGb", "20"},
                                      {"labels", {{"team", "vision"}}}}.dump(),
                 {{"host", "127.0.0.1:9"}});
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.json["kind"], "compute#operation");
  EXPECT_EQ(r.json["operationType"], "insert");
  EXPECT_EQ(r.json["status"], "RUNNING");
  EXPECT_EQ(r.json["targetLink"],
            "http://127.0.0.1:9/compute/v1/projects/p/zones/us-central2-b/disks/data");
  Json creating = Get(std::string(kDisks) + "/data").json;
  EXPECT_EQ(creating["status"], "CREATING");
  EXPECT_EQ(r.json["targetId"], creating["id"]);

  Json op = WaitComputeOperation(r.json);
  EXPECT_EQ(op["status"], "DONE");
  EXPECT_FALSE(op.contains("error")) << op;
  Reply got = Send("GET", std::string(kDisks) + "/data", "", {{"host", "127.0.0.1:9"}});
  ASSERT_EQ(got.status, 200);
  Json d = got.json;
  std::string zone = "http://127.0.0.1:9/compute/v1/projects/p/zones/us-central2-b";
  EXPECT_EQ(d["kind"], "compute#disk");
  EXPECT_EQ(d["name"], "data");
  EXPECT_EQ(d["status"], "READY");
  EXPECT_EQ(d["sizeGb"], "20") << "an int64 is a JSON string";
  EXPECT_EQ(d["zone"], zone);
  EXPECT_EQ(d["type"], zone + "/diskTypes/pd-ssd");
  EXPECT_EQ(d["selfLink"], zone + "/disks/data");
  EXPECT_EQ(d["labels"], (Json{{"team", "vision"}}));
  EXPECT_TRUE(std::regex_match(d["id"].get<std::string>(), std::regex("[1-9][0-9]{18}")));
  EXPECT_TRUE(std::regex_match(d["creationTimestamp"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[-+]\d\d:\d\d)")));
  EXPECT_FALSE(d.contains("users")) << "no one uses a new disk";
  EXPECT_FALSE(d.contains("sourceImage"));

  // Its backing file: sparse, of its size, in the emulator's disk dir.
  struct stat st {};
  ASSERT_EQ(::stat(tmp_.Path("disks/p/us-central2-b/data.img").c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), 20 * kBytesPerDiskGb);
}

TEST_F(DisksApiTest, ANameInUseIsAlreadyExistsAndAnUnknownDiskIsNotFound) {
  CreateDisk("data");
  Reply again = Post(kDisks, Json{{"name", "data"}});
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(again.json["error"]["message"],
            "The resource 'projects/p/zones/us-central2-b/disks/data' already exists");
  EXPECT_EQ(again.json["error"]["errors"][0]["reason"], "alreadyExists");
  Reply missing = Get(std::string(kDisks) + "/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.json["error"]["message"],
            "The resource 'projects/p/zones/us-central2-b/disks/nope' was not found");
  EXPECT_EQ(Delete(std::string(kDisks) + "/nope").status, 404);
}

TEST_F(DisksApiTest, BadBodiesAreInvalidWithComputesWords) {
  Reply small = Post(kDisks, Json{{"name", "d"}, {"type", "pd-balanced"}, {"sizeGb", "1"}});
  EXPECT_EQ(small.status, 400);
  EXPECT_EQ(small.json["error"]["errors"][0]["reason"], "invalid");
  EXPECT_EQ(small.json["error"]["message"],
            "Invalid value for field 'resource.sizeGb': '1'. Disk size cannot be smaller than "
            "10 GB.");
  EXPECT_EQ(Post(kDisks, Json{{"name", "Bad_Name"}}).status, 400);
  EXPECT_EQ(Send("POST", kDisks, "{not json").status, 400);
  EXPECT_EQ(Get(std::string(kDisks) + "?maxResults=501").status, 400);
  EXPECT_EQ(Get(std::string(kDisks) + "?filter=name%20is%20x").status, 400);
  // Nothing was made.
  EXPECT_EQ(Get(kDisks).json["items"], Json::array());
}

TEST_F(DisksApiTest, ListPagesAndFiltersAsGcloudRewritesItsFilter) {
  for (const char* name : {"alpha", "beta", "gamma"}) {
    CreateDisk(name);
  }
  Reply first = Get(std::string(kDisks) + "?maxResults=2");
  ASSERT_EQ(first.status, 200);
  EXPECT_EQ(first.json["kind"], "compute#diskList");
  ASSERT_EQ(first.json["items"].size(), 2u);
  EXPECT_EQ(first.json["items"][1]["name"], "beta");
  ASSERT_TRUE(first.json.contains("nextPageToken"));
  Reply second = Get(std::string(kDisks) + "?maxResults=2&pageToken=" +
                     first.json["nextPageToken"].get<std::string>());
  ASSERT_EQ(second.json["items"].size(), 1u);
  EXPECT_EQ(second.json["items"][0]["name"], "gamma");
  EXPECT_FALSE(second.json.contains("nextPageToken"));

  // gcloud's `--filter=name=beta` reaches the server as name eq ".*\bbeta\b.*".
  Reply eq = Get(std::string(kDisks) + R"(?filter=name eq ".*\bbeta\b.*")");
  ASSERT_EQ(eq.status, 200) << eq.text;
  ASSERT_EQ(eq.json["items"].size(), 1u);
  EXPECT_EQ(eq.json["items"][0]["name"], "beta");
  Reply ne = Get(std::string(kDisks) + R"(?filter=(name ne "beta")(status eq READY))");
  ASSERT_EQ(ne.status, 200) << ne.text;
  EXPECT_EQ(ne.json["items"].size(), 2u);
}

TEST_F(DisksApiTest, AggregatedListGroupsDisksByZone) {
  CreateDisk("data");
  Reply r = Get("/compute/v1/projects/p/aggregated/disks");
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.json["kind"], "compute#diskAggregatedList");
  ASSERT_EQ(r.json["items"]["zones/us-central2-b"]["disks"].size(), 1u);
  EXPECT_EQ(r.json["items"]["zones/us-central2-b"]["disks"][0]["name"], "data");
  EXPECT_EQ(Get("/compute/v1/projects/other/aggregated/disks").json["items"], Json::object());
}

TEST_F(DisksApiTest, DeleteTakesTheDiskAndItsFileAway) {
  CreateDisk("data");
  Reply r = Delete(std::string(kDisks) + "/data");
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.json["operationType"], "delete");
  EXPECT_EQ(Get(std::string(kDisks) + "/data").json["status"], "DELETING");
  EXPECT_EQ(Delete(std::string(kDisks) + "/data").json["error"]["errors"][0]["reason"],
            "resourceNotReady");
  EXPECT_EQ(WaitComputeOperation(r.json)["status"], "DONE");
  EXPECT_EQ(Get(std::string(kDisks) + "/data").status, 404);
  struct stat st {};
  EXPECT_NE(::stat(tmp_.Path("disks/p/us-central2-b/data.img").c_str(), &st), 0);
  // The name is free again.
  EXPECT_EQ(CreateDisk("data")["status"], "READY");
}

TEST_F(DisksApiTest, DiskTypesAreListedAndDescribed) {
  Reply list = Get("/compute/v1/projects/p/zones/us-central2-b/diskTypes");
  ASSERT_EQ(list.status, 200);
  std::vector<std::string> names;
  for (const Json& t : list.json["items"]) {
    names.push_back(t["name"]);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"hyperdisk-balanced", "pd-balanced", "pd-ssd",
                                             "pd-standard"}));
  Reply one = Get("/compute/v1/projects/p/zones/us-central2-b/diskTypes/pd-standard");
  ASSERT_EQ(one.status, 200);
  EXPECT_EQ(one.json["kind"], "compute#diskType");
  EXPECT_EQ(one.json["validDiskSize"], "10GB-65536GB");
  EXPECT_EQ(one.json["defaultDiskSizeGb"], "500");
  EXPECT_EQ(Get("/compute/v1/projects/p/zones/us-central2-b/diskTypes/pd-x").status, 404);
}

}  // namespace
}  // namespace tpufleet::emulator
