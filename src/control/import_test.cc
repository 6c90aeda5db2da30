#include "control/import.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "control/testing/test_world.h"

namespace tpufleet {
namespace {

using testing::Contains;
using testing::kBobKey;
using testing::kProject;
using testing::kZoneA;
using testing::kZoneB;
using testing::TestWorld;

// A v4-32 that someone made with gcloud: no fleet label, bob's key in ssh-keys.
CloudNode MadeByGcloud(TestWorld& t, const std::string& id, const std::string& zone) {
  CreateNodeRequest r;
  r.zone = zone;
  r.node_id = id;
  r.type = "v4-32";
  r.runtime_version = "tpu-ubuntu2204-base";
  r.labels = {{"owner", "bob"}};
  r.metadata = {{"ssh-keys", std::string("bob:") + kBobKey}, {"startup-script", "echo hi"}};
  r.data_disks.resize(1);
  r.data_disks[0].source = "projects/" + std::string(kProject) + "/zones/" + zone + "/disks/data";
  return t.cloud.AddNode(r);
}

ImportRequest Request(std::vector<std::string> nodes = {}) {
  ImportRequest r;
  r.project = kProject;
  r.zones = {kZoneB, kZoneA};
  r.nodes = std::move(nodes);
  return r;
}

TEST(Import, AdoptsANodeMadeElsewhere) {
  TestWorld t;
  CloudNode made = MadeByGcloud(t, "nb", kZoneB);
  t.cloud.ClearCalls();

  Result<std::vector<NodeOutcome>> out = Import(t.world, Request(), t.progress);

  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].node, "nb");
  EXPECT_EQ((*out)[0].status, Status::Ok());
  EXPECT_TRUE((*out)[0].changed);
  // The fleet key is appended; bob's key and the other metadata stay.
  std::string fleet_key = t.FleetPublicKey();
  CloudNode now = *t.cloud.Node(kZoneB, "nb");
  EXPECT_EQ(now.metadata.at("ssh-keys"), std::string("bob:") + kBobKey + "\ntester:" + fleet_key);
  EXPECT_EQ(now.metadata.at("startup-script"), "echo hi");
  EXPECT_EQ(t.cloud.ssh_key_sets(), 1);
  EXPECT_EQ(t.cloud.creates() + t.cloud.deletes(), 0) << "import never creates or deletes";

  NodeRecord rec = t.Record("nb");
  EXPECT_EQ(rec.fleet, "imported");
  EXPECT_EQ(rec.zone, kZoneB);
  EXPECT_EQ(rec.type, "v4-32");
  EXPECT_EQ(rec.state, NodeState::kReady);
  EXPECT_EQ(rec.provider, "gcp-tpu");
  EXPECT_EQ(rec.login, "tester");
  EXPECT_EQ(rec.labels, (std::map<std::string, std::string>{{"owner", "bob"}}));
  // Its disks come along (issue 15).
  ASSERT_EQ(rec.data_disks.size(), 1u);
  EXPECT_EQ(rec.data_disks[0].source, made.data_disks[0].source);
  EXPECT_EQ(rec.data_disks[0].mode, "read-only");
  ASSERT_EQ(rec.workers.size(), 4u);
  for (const WorkerRecord& w : rec.workers) {
    EXPECT_EQ(w.address, made.workers[w.index].address);
    EXPECT_FALSE(w.host_key.empty());
    EXPECT_TRUE(Contains(t.KnownHosts(), w.address + " " + w.host_key)) << w.index;
  }
  EXPECT_TRUE(Contains(t.SshConfig(), "Host nb\n"));
  EXPECT_TRUE(Contains(t.SshConfig(), "Host nb-w3\n"));
  EXPECT_EQ(t.Events("imported", "nb").size(), 1u);
}

TEST(Import, SkipsWhatItTracksAndKeepsAKeyThatIsThere) {
  TestWorld t;
  MadeByGcloud(t, "nb", kZoneB);
  ASSERT_TRUE(Import(t.world, Request(), t.progress).ok());
  MadeByGcloud(t, "other", kZoneA);
  t.cloud.ClearCalls();

  Result<std::vector<NodeOutcome>> out = Import(t.world, Request(), t.progress);

  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 2u);
  for (const NodeOutcome& o : *out) {
    EXPECT_EQ(o.status, Status::Ok()) << o.node;
    EXPECT_EQ(o.changed, o.node == "other") << o.node;
  }
  EXPECT_EQ(t.cloud.ssh_key_sets(), 1) << "only the new node";
  EXPECT_EQ(t.Events("imported").size(), 2u);
  EXPECT_EQ(t.Records("imported").size(), 2u);
}

TEST(Import, RefusesANameAnotherFleetHas) {
  TestWorld t;
  ASSERT_EQ(t.Up(t.Spec(std::string("fleet: lab\nproject: ") + kProject +
                        "\nnodes:\n  - name: nb\n    type: v4-8\n    zones: [us-central2-b]\n"))
                .nodes[0]
                .status,
            Status::Ok());
  MadeByGcloud(t, "nb", kZoneA);
  t.cloud.ClearCalls();

  Result<std::vector<NodeOutcome>> out = Import(t.world, Request(), t.progress);

  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 2u);  // zone b's is the fleet's own, tracked; zone a's clashes
  int refused = 0;
  for (const NodeOutcome& o : *out) {
    refused += o.status.code() == StatusCode::kAlreadyExists ? 1 : 0;
  }
  EXPECT_EQ(refused, 1);
  EXPECT_EQ(t.cloud.mutating_calls(), 0);
  EXPECT_EQ(t.Records().size(), 1u);
}

TEST(Import, RecordsTheNodesLabelsButNotTpufleetsOwn) {
  TestWorld t;
  t.cloud.AddNode(testing::ForeignNode(kZoneB, "theirs", "v4-8",
                                       {{"team", "a"}, {"tpufleet-fleet", "elsewhere"}}));

  ASSERT_TRUE(Import(t.world, Request(), t.progress).ok());

  EXPECT_EQ(t.Record("theirs").labels, (std::map<std::string, std::string>{{"team", "a"}}));
}

TEST(Import, OnlyTheNamedNodes) {
  TestWorld t;
  MadeByGcloud(t, "nb", kZoneB);
  MadeByGcloud(t, "other", kZoneA);

  Result<std::vector<NodeOutcome>> out = Import(t.world, Request({"other"}), t.progress);

  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].node, "other");
  EXPECT_EQ(t.Records().size(), 1u);

  out = Import(t.world, Request({"missing"}), t.progress);
  EXPECT_EQ(out.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(out.status().message(), "missing")) << out.status().message();
}

}  // namespace
}  // namespace tpufleet
