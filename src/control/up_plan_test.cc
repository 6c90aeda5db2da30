// Up's decisions about nodes that exist (refuse, differs, setup reruns) and PlanUp
// (--dry-run), through a World of fakes. The decisions themselves are core's
// (core/up_plan_test.cc tests them without I/O); these check that up acts on them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "control/testing/test_world.h"
#include "control/testing/up_specs.h"
#include "control/up.h"

namespace tpufleet {
namespace {

using testing::Contains;
using testing::kProject;
using testing::kZoneA;
using testing::kZoneB;
using testing::SmallNode;
using testing::TestWorld;
using testing::Trainer;

// ---------------------------------------------------------------------------------------
// Nodes up refuses to touch.

TEST(Up, ASpecThatNowDiffersIsReportedNotRemade) {
  TestWorld t;
  ASSERT_EQ(t.Up(t.Spec(Trainer())).nodes[0].status, Status::Ok());
  t.cloud.ClearCalls();

  std::string changed = Trainer();
  changed.replace(changed.find("capacity: spot"), 14, "capacity: on-demand");
  UpReport r = t.Up(t.Spec(changed));

  EXPECT_EQ(r.nodes[0].status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.nodes[0].status.message().find("tpufleet down trainer"), std::string::npos)
      << r.nodes[0].status.message();
  EXPECT_EQ(t.cloud.creates() + t.cloud.deletes(), 0);
  EXPECT_EQ(t.Records()[0].capacity, "spot");
}

TEST(Up, RefusesANodeItDidNotMake) {
  TestWorld t;
  t.cloud.AddNode(testing::ForeignNode(kZoneB, "trainer", "v4-32", {{"team", "other"}}));
  t.cloud.ClearCalls();

  UpReport r = t.Up(t.Spec(Trainer()));

  EXPECT_EQ(r.nodes[0].status.code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(Contains(r.nodes[0].status.message(), "tpufleet import"))
      << r.nodes[0].status.message();
  EXPECT_EQ(t.cloud.mutating_calls(), 0);
  EXPECT_TRUE(t.cloud.Node(kZoneB, "trainer"));
}

TEST(Up, RefusesANodeNameAnotherFleetHas) {
  // Node names are SSH aliases: a second "trainer" would break every SSH file.
  TestWorld t;
  ASSERT_EQ(t.Up(t.Spec(Trainer())).nodes[0].status, Status::Ok());
  t.cloud.ClearCalls();
  FleetSpec other = t.Spec(std::string("fleet: lab2\nproject: ") + kProject +
                           "\nnodes:\n  - name: trainer\n    type: v4-8\n"
                           "    zones: [us-central2-a]\n");

  UpReport r = t.Up(other);

  EXPECT_EQ(r.nodes[0].status.code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(Contains(r.nodes[0].status.message(), "fleet lab already has a node named trainer"))
      << r.nodes[0].status.message();
  EXPECT_EQ(t.cloud.mutating_calls(), 0);
  EXPECT_EQ(t.Records().size(), 1u);
  EXPECT_TRUE(Contains(t.SshConfig(), "Host trainer-w3\n"));
}

// ---------------------------------------------------------------------------------------
// Issue 11, fix 4: an edited setup script was not applied; up said "nothing changed".

TEST(Issue11, AnEditedSetupRunsAgainOnEveryWorkerAndTheDryRunSaysSo) {
  TestWorld t;
  FleetSpec first = t.Spec(Trainer("    setup: echo one\n"));
  ASSERT_EQ(t.Up(first).nodes[0].status, Status::Ok());
  EXPECT_EQ(t.workers.RunsWith("echo one"), 4);

  FleetSpec edited = t.Spec(Trainer("    setup: echo two\n"));
  Result<UpPlan> plan = PlanUp(edited, t.catalog, t.world);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->nodes[0].action, PlanAction::kKeep);
  EXPECT_EQ(plan->nodes[0].setup_reruns, 4);
  EXPECT_EQ(plan->nodes[0].detail, "setup changed: rerun on 4 workers");

  t.cloud.ClearCalls();
  UpReport r = t.Up(edited);
  EXPECT_EQ(r.nodes[0].status, Status::Ok());
  EXPECT_TRUE(r.nodes[0].changed) << "up must not say nothing changed";
  EXPECT_EQ(t.workers.RunsWith("echo two"), 4) << "the new version runs on every worker";
  EXPECT_EQ(t.cloud.creates() + t.cloud.deletes(), 0) << "the node itself is kept";
  for (const WorkerRecord& w : t.Record("trainer").workers) {
    EXPECT_EQ(w.setup_digest, SetupDigest(edited.nodes[0].setup)) << w.index;
  }

  UpReport again = t.Up(edited);
  EXPECT_FALSE(again.nodes[0].changed);
  EXPECT_EQ(t.workers.RunsWith("echo two"), 4) << "and once only";
  EXPECT_EQ(PlanUp(edited, t.catalog, t.world)->nodes[0].setup_reruns, 0);
}

// ---------------------------------------------------------------------------------------
// PlanUp (--dry-run).

TEST(PlanUp, SaysWhatUpWouldDoAndChangesNothing) {
  TestWorld t;
  FleetSpec spec = t.Spec(std::string("fleet: lab\nproject: ") + kProject + "\nnodes:\n" +
                          SmallNode("kept") + SmallNode("preempted") + SmallNode("booting") +
                          SmallNode("foreign") + SmallNode("fresh") +
                          SmallNode("spot", "    capacity: spot\n"));
  auto add = [&](const std::string& id, const std::string& zone, bool ours) {
    CreateNodeRequest r;
    r.zone = zone;
    r.node_id = id;
    r.type = "v4-8";
    if (ours) {
      r.labels = {{"tpufleet-fleet", "lab"}};
    }
    t.cloud.AddNode(r);
  };
  add("kept", kZoneA, true);
  add("preempted", kZoneB, true);
  t.cloud.Preempt(kZoneB, "preempted");
  add("booting", kZoneB, true);
  t.cloud.SetState(kZoneB, "booting", NodeState::kCreating);
  add("foreign", kZoneB, false);
  ASSERT_EQ(t.store->AddEvent({0, t.clock.Now(), "lab", "x", "stockout",
                               "type=v4-8 zone=us-central2-b"}),
            Status::Ok());
  t.cloud.ClearCalls();

  Result<UpPlan> plan = PlanUp(spec, t.catalog, t.world);

  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->nodes.size(), 6u);
  const std::vector<NodePlan>& p = plan->nodes;
  EXPECT_EQ(p[0].node, "kept");
  EXPECT_EQ(PlanActionName(p[0].action), "keep");
  EXPECT_EQ(p[0].zones, std::vector<std::string>{kZoneA});
  EXPECT_EQ(p[0].state, NodeState::kReady);
  EXPECT_EQ(PlanActionName(p[1].action), "recreate");
  EXPECT_TRUE(Contains(p[1].detail, "PREEMPTED")) << p[1].detail;
  EXPECT_EQ(PlanActionName(p[2].action), "wait");
  EXPECT_EQ(p[2].state, NodeState::kCreating);
  EXPECT_EQ(PlanActionName(p[3].action), "refuse");
  EXPECT_TRUE(Contains(p[3].detail, "tpufleet import")) << p[3].detail;
  EXPECT_EQ(PlanActionName(p[4].action), "create");
  EXPECT_EQ(p[4].zones, (std::vector<std::string>{kZoneA, kZoneB})) << "b stocked out";
  EXPECT_EQ(p[4].spec, &spec.nodes[4]);
  // v4-8 on demand: 4 chips at the catalog's 3.22 USD per chip-hour in us-central2.
  EXPECT_NEAR(p[4].usd_per_hour, 4 * 3.22, 1e-9);
  EXPECT_GT(p[5].usd_per_hour, 0);
  EXPECT_LT(p[5].usd_per_hour, p[4].usd_per_hour) << "spot is cheaper";

  EXPECT_EQ(t.cloud.mutating_calls(), 0);
  EXPECT_TRUE(t.Records().empty()) << "a dry run writes nothing";
}

}  // namespace
}  // namespace tpufleet
