#include "control/down.h"

#include <gtest/gtest.h>

#include <string>

#include "control/testing/test_world.h"

namespace tpufleet {
namespace {

using testing::Contains;
using testing::kProject;
using testing::kZoneB;
using testing::TestWorld;

// Fleet "lab": trainer (v4-32) and eval (v4-8) in zone b; `more` is added to trainer.
std::string TwoNodes(const std::string& more = "") {
  return std::string("fleet: lab\nproject: ") + kProject +
         "\nnodes:\n  - name: trainer\n    type: v4-32\n    zones: [us-central2-b]\n" + more +
         "  - name: eval\n    type: v4-8\n    zones: [us-central2-b]\n";
}

NodeRecord Only(TestWorld& t, const std::string& name) {
  NodeRecord r = t.Record(name);
  EXPECT_EQ(r.name, name);
  return r;
}

TEST(Down, DeletesTheNodeAndForgetsIt) {
  TestWorld t;
  ASSERT_EQ(t.Up(t.Spec(TwoNodes())).nodes.size(), 2u);
  ASSERT_TRUE(Contains(t.SshConfig(), "Host trainer-w3\n"));
  t.cloud.ClearCalls();

  std::vector<NodeOutcome> out = Down(t.world, {Only(t, "trainer")}, {}, t.progress).nodes;

  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].node, "trainer");
  EXPECT_EQ(out[0].status, Status::Ok());
  EXPECT_TRUE(out[0].changed);
  EXPECT_EQ(t.cloud.CallCount("DeleteNode"), 1);
  EXPECT_FALSE(t.cloud.Node(kZoneB, "trainer"));
  EXPECT_TRUE(t.cloud.Node(kZoneB, "eval")) << "only what was asked";
  ASSERT_EQ(t.Records().size(), 1u);
  EXPECT_EQ(t.Records()[0].name, "eval");
  EXPECT_EQ(t.Events("deleted", "trainer").size(), 1u);
  EXPECT_TRUE(t.progress.Saw("trainer", NodePhase::kDeleted));
  std::string config = t.SshConfig();
  EXPECT_FALSE(Contains(config, "Host trainer")) << config;
  EXPECT_TRUE(Contains(config, "Host eval\n")) << config;
}

TEST(Down, DeletesAQueuedNodeThroughItsQueuedResource) {
  TestWorld t;
  ASSERT_EQ(t.Up(t.Spec(TwoNodes("    queued: true\n"))).nodes[0].status, Status::Ok());
  ASSERT_TRUE(t.cloud.Queued(kZoneB, "trainer"));
  t.cloud.ClearCalls();

  std::vector<NodeOutcome> out = Down(t.world, {Only(t, "trainer")}, {}, t.progress).nodes;

  EXPECT_EQ(out[0].status, Status::Ok());
  EXPECT_EQ(t.cloud.CallCount("DeleteQueuedResource"), 1);
  EXPECT_FALSE(t.cloud.Queued(kZoneB, "trainer"));
  EXPECT_FALSE(t.cloud.Node(kZoneB, "trainer"));
  EXPECT_EQ(t.Records().size(), 1u);
}

TEST(Down, NodeAlreadyGoneIsStillForgotten) {
  TestWorld t;
  ASSERT_EQ(t.Up(t.Spec(TwoNodes())).nodes.size(), 2u);
  t.cloud.Vanish(kZoneB, "trainer");
  t.cloud.ClearCalls();

  std::vector<NodeOutcome> out = Down(t.world, t.Records(), {}, t.progress).nodes;

  ASSERT_EQ(out.size(), 2u);
  for (const NodeOutcome& o : out) {
    EXPECT_EQ(o.status, Status::Ok()) << o.node;
  }
  EXPECT_EQ(t.cloud.CallCount("DeleteNode"), 1) << "only eval was still there";
  EXPECT_TRUE(t.cloud.AllNodes().empty());
  EXPECT_TRUE(t.Records().empty());
  EXPECT_FALSE(Contains(t.SshConfig(), "Host "));
}

TEST(Down, CloudErrorKeepsTheRecord) {
  TestWorld t;
  ASSERT_EQ(t.Up(t.Spec(TwoNodes())).nodes.size(), 2u);
  t.cloud.FailNext("DeleteNode", PermissionDeniedError("tpu.nodes.delete denied"));

  std::vector<NodeOutcome> out = Down(t.world, {Only(t, "eval")}, {}, t.progress).nodes;

  EXPECT_EQ(out[0].status.code(), StatusCode::kPermissionDenied);
  EXPECT_FALSE(out[0].changed);
  EXPECT_EQ(t.Records().size(), 2u) << "kept, so the next down finishes the job";
  EXPECT_TRUE(t.progress.Saw("eval", NodePhase::kFailed));

  out = Down(t.world, {Only(t, "eval")}, {}, t.progress).nodes;
  EXPECT_EQ(out[0].status, Status::Ok());
  EXPECT_EQ(t.Records().size(), 1u);
}

}  // namespace
}  // namespace tpufleet
