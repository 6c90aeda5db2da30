// Attaching Compute Engine disks to TPU nodes over HTTP: node create with dataDisks and
// patch of data_disks (what gcloud alpha tpu-vm attach-disk and detach-disk send), the
// rules of modes, the disks' users, and what the worker hosts are told.
#include "emulator/testing/compute_disks_fixture.h"

namespace tpufleet::emulator {
namespace {

class DisksAttachTest : public DiskFixture {
 protected:
  std::string Error(const Reply& r) { return r.json["error"].value("message", std::string()); }
};

TEST_F(DisksAttachTest, ANodeCreatedWithADiskBootsWithItAndTheDiskNamesItsWorker) {
  CreateDisk("data");
  Json body = NodeBody();
  body["dataDisks"] = Json::array({{{"sourceDisk", "projects/p/zones/us-central2-b/disks/data"}}});
  Json op = CreateNode("n1", body);
  ASSERT_FALSE(op.contains("error")) << op;
  Json node = Get(NodePath("n1")).json;
  EXPECT_EQ(node["dataDisks"][0]["mode"], "READ_WRITE") << "the API's default mode";

  NodeHostSpec booted = hosts_->last_boot_spec();
  ASSERT_EQ(booted.data_disks.size(), 1u);
  EXPECT_EQ(booted.data_disks[0].name, "data");
  EXPECT_EQ(booted.data_disks[0].image, tmp_.Path("disks/p/us-central2-b/data.img"));
  EXPECT_FALSE(booted.data_disks[0].read_only);

  Json users = UsersOf("data");
  ASSERT_EQ(users.size(), 1u);
  std::string user = users[0];
  std::string expected_tail = "/compute/v1/projects/p/zones/us-central2-b/instances/t1v-n-";
  EXPECT_NE(user.find(expected_tail), std::string::npos) << user;
  // The instance is named as the worker's hostname.
  Json attrs = Post(NodePath("n1") + ":getGuestAttributes").json;
  EXPECT_EQ(user.substr(user.rfind('/') + 1),
            attrs["guestAttributes"][0]["queryValue"]["items"][1]["value"]);

  // In use: it cannot be deleted, in Compute's words.
  Reply del = Delete(std::string(kDisks) + "/data");
  EXPECT_EQ(del.status, 400);
  EXPECT_EQ(del.json["error"]["errors"][0]["reason"], "resourceInUseByAnotherResource");
  EXPECT_EQ(Error(del), "The disk resource 'projects/p/zones/us-central2-b/disks/data' is "
                        "already being used by '" +
                            user.substr(user.find("projects/")) + "'");

  // Deleting the node releases the disk.
  Reply gone = Delete(NodePath("n1"));
  ASSERT_EQ(gone.status, 200);
  WaitOperation(gone.json["name"]);
  EXPECT_EQ(UsersOf("data"), Json::array());
  EXPECT_EQ(Delete(std::string(kDisks) + "/data").status, 200);
}

TEST_F(DisksAttachTest, ReadOnlyGoesToManyNodesAndDetachTellsTheHosts) {
  CreateDisk("data");
  CreateNode("a");
  CreateNode("b");
  hosts_->ClearCalls();
  ASSERT_EQ(SetDisks("a", Json::array({Attached("data", "READ_ONLY")})).status, 200);
  ASSERT_EQ(SetDisks("b", Json::array({Attached("data", "READ_ONLY")})).status, 200);
  EXPECT_EQ(hosts_->CallsStartingWith("SetDataDisks"),
            (std::vector<std::string>{"SetDataDisks " + NodeName("a") + " disks=data:ro",
                                      "SetDataDisks " + NodeName("b") + " disks=data:ro"}));
  EXPECT_EQ(UsersOf("data").size(), 2u);
  EXPECT_EQ(Get(NodePath("a")).json["dataDisks"], Json::array({Attached("data", "READ_ONLY")}));

  // A writer may not join readers.
  CreateNode("c");
  Reply writer = Patch(NodePath("c") + "?updateMask=data_disks",
                       Json{{"dataDisks", Json::array({Attached("data", "READ_WRITE")})}});
  EXPECT_EQ(writer.status, 400);
  EXPECT_EQ(writer.json["error"]["status"], "FAILED_PRECONDITION");
  EXPECT_NE(Error(writer).find("The disk resource 'projects/p/zones/us-central2-b/disks/data' "
                               "is already being used by 'projects/p/zones/us-central2-b/"
                               "instances/t1v-n-"),
            std::string::npos)
      << Error(writer);

  // Detach (gcloud sends the node's list without the disk).
  hosts_->ClearCalls();
  ASSERT_EQ(SetDisks("a", Json::array()).status, 200);
  EXPECT_EQ(hosts_->CallsStartingWith("SetDataDisks"),
            (std::vector<std::string>{"SetDataDisks " + NodeName("a") + " disks="}));
  EXPECT_FALSE(Get(NodePath("a")).json.contains("dataDisks"));
  EXPECT_EQ(UsersOf("data").size(), 1u);
}

TEST_F(DisksAttachTest, AReadWriteDiskBelongsToOneNode) {
  CreateDisk("data");
  CreateNode("a");
  CreateNode("b");
  ASSERT_EQ(SetDisks("a", Json::array({Attached("data", "READ_WRITE")})).status, 200);
  for (const char* mode : {"READ_WRITE", "READ_ONLY"}) {
    Reply r = Patch(NodePath("b") + "?updateMask=data_disks",
                    Json{{"dataDisks", Json::array({Attached("data", mode)})}});
    EXPECT_EQ(r.status, 400) << mode;
    EXPECT_NE(Error(r).find("is already being used by"), std::string::npos) << Error(r);
  }
  EXPECT_FALSE(Get(NodePath("b")).json.contains("dataDisks")) << "nothing changed";
  // The node that has it may change its mode.
  ASSERT_EQ(SetDisks("a", Json::array({Attached("data", "READ_ONLY")})).status, 200);
  EXPECT_EQ(SetDisks("b", Json::array({Attached("data", "READ_ONLY")})).status, 200);
}

TEST_F(DisksAttachTest, AMultiHostNodeTakesDisksReadOnlyOnly) {
  CreateDisk("data");
  CreateNode("pod", NodeBody("v4-32"));
  Reply rw = Patch(NodePath("pod") + "?updateMask=data_disks",
                   Json{{"dataDisks", Json::array({Attached("data", "READ_WRITE")})}});
  EXPECT_EQ(rw.status, 400);
  EXPECT_NE(Error(rw).find("a disk attached to a multi-host TPU must be READ_ONLY"),
            std::string::npos)
      << Error(rw);
  ASSERT_EQ(SetDisks("pod", Json::array({Attached("data", "READ_ONLY")})).status, 200);
  EXPECT_EQ(UsersOf("data").size(), 4u) << "one user per worker VM";
}

TEST_F(DisksAttachTest, TheDiskMustExistBeReadyInTheZoneAndOfATypeTheTpuTakes) {
  CreateNode("n1");
  auto refused = [&](const Json& disks) {
    return Patch(NodePath("n1") + "?updateMask=data_disks", Json{{"dataDisks", disks}});
  };
  Reply missing = refused(Json::array({Attached("nope", "READ_ONLY")}));
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(Error(missing), "Resource 'projects/p/zones/us-central2-b/disks/nope' was not found");

  Post(kDisks, Json{{"name", "fresh"}, {"type", "pd-balanced"}, {"sizeGb", "10"}});
  Reply creating = refused(Json::array({Attached("fresh", "READ_ONLY")}));
  EXPECT_EQ(creating.status, 400);
  EXPECT_EQ(creating.json["error"]["status"], "FAILED_PRECONDITION");

  CreateDisk("standard", "pd-standard");
  Reply type = refused(Json::array({Attached("standard", "READ_ONLY")}));
  EXPECT_EQ(type.status, 400);
  EXPECT_NE(Error(type).find("v4 TPU VMs take pd-balanced disks only"), std::string::npos)
      << Error(type);

  Reply regional =
      refused(Json::array(
          {{{"sourceDisk", "projects/p/regions/us-central2/disks/d"}, {"mode", "READ_ONLY"}}}));
  EXPECT_EQ(regional.status, 400);
  CreateDisk("data");
  Reply twice = refused(Json::array({Attached("data", "READ_ONLY"), Attached("data", "READ_ONLY")}));
  EXPECT_EQ(twice.status, 400);
  EXPECT_NE(Error(twice).find("listed twice"), std::string::npos);

  // A node of another zone cannot have it.
  Reply other = Post("/v2/projects/p/locations/europe-west4-a/nodes?nodeId=far",
                     Json{{"acceleratorType", "v3-8"},
                          {"runtimeVersion", "tpu-ubuntu2204-base"},
                          {"dataDisks", Json::array({Attached("data", "READ_ONLY")})}});
  EXPECT_EQ(other.status, 400);
  EXPECT_NE(Error(other).find("can attach only disks of its own zone"), std::string::npos)
      << Error(other);
  EXPECT_EQ(UsersOf("data"), Json::array());
}

TEST_F(DisksAttachTest, GcloudsWholeNodeBodyAttachesAndAStoppedNodeGetsItsDisksAtStart) {
  CreateDisk("data");
  CreateNode("n1");
  Reply stop = Post(NodePath("n1") + ":stop");
  ASSERT_EQ(stop.status, 200);
  WaitOperation(stop.json["name"]);
  // gcloud sends the node as it got it, with the disk appended.
  Json node = Get(NodePath("n1")).json;
  node["dataDisks"] = Json::array({Attached("data", "READ_ONLY")});
  hosts_->ClearCalls();
  Reply patch = Patch(NodePath("n1") + "?updateMask=data_disks", node);
  ASSERT_EQ(patch.status, 200) << patch.text;
  Json done = WaitOperation(patch.json["name"]);
  EXPECT_EQ(done["response"]["dataDisks"], Json::array({Attached("data", "READ_ONLY")}));
  EXPECT_TRUE(hosts_->CallsStartingWith("SetDataDisks").empty()) << "a stopped node has no hosts";
  Reply start = Post(NodePath("n1") + ":start");
  ASSERT_EQ(start.status, 200);
  WaitOperation(start.json["name"]);
  ASSERT_EQ(hosts_->last_boot_spec().data_disks.size(), 1u);
  EXPECT_TRUE(hosts_->last_boot_spec().data_disks[0].read_only);
}

TEST_F(DisksAttachTest, ANodeThatFailsToCreateReleasesItsDisks) {
  CreateDisk("data");
  ASSERT_EQ(Post("/emulator/v1/faults", Json{{"kind", "stockout"}, {"zone", kZone}}).status, 200);
  Json body = NodeBody();
  body["dataDisks"] = Json::array({Attached("data", "READ_WRITE")});
  Json op = CreateNode("n1", body);
  EXPECT_TRUE(op.contains("error")) << op;
  EXPECT_EQ(UsersOf("data"), Json::array());
}

}  // namespace
}  // namespace tpufleet::emulator
