#include "control/fleet_status.h"

#include <gtest/gtest.h>

#include <string>

#include "control/testing/test_world.h"
#include "control/up.h"

namespace tpufleet {
namespace {

using std::chrono::hours;
using testing::kProject;
using testing::kZoneB;
using testing::TestWorld;

// Fleet "lab" with one v4-32 (16 chips, 4 workers) in zone b, paid for as `capacity`.
std::string OneNode(const std::string& capacity) {
  return std::string("fleet: lab\nproject: ") + kProject +
         "\nnodes:\n  - name: trainer\n    type: v4-32\n    zones: [us-central2-b]\n"
         "    capacity: " +
         capacity + "\n";
}

double Hours(std::chrono::seconds s) { return std::chrono::duration<double>(s).count() / 3600; }

TEST(FleetStatus, FromTheStoreWithAgeAndCost) {
  TestWorld t;
  Clock::WallTime asked = t.clock.Now();
  ASSERT_EQ(t.Up(t.Spec(OneNode("on-demand"))).nodes[0].status, Status::Ok());
  t.clock.Advance(hours(2));
  t.cloud.ClearCalls();

  Result<FleetStatusReport> views = FleetStatus(t.world, t.catalog, {});

  ASSERT_TRUE(views.ok()) << views.status().ToString();
  ASSERT_EQ(views->nodes.size(), 1u);
  const NodeView& v = views->nodes.front();
  EXPECT_EQ(v.record.name, "trainer");
  EXPECT_EQ(v.record.state, NodeState::kReady);
  EXPECT_EQ(v.age, std::chrono::duration_cast<std::chrono::seconds>(t.clock.Now() - asked));
  EXPECT_GE(v.age, hours(2));
  // The catalog's v4 price in us-central2: 3.22 USD per chip-hour, 16 chips.
  ASSERT_TRUE(v.cost_usd);
  EXPECT_NEAR(*v.cost_usd, 3.22 * 16 * Hours(v.age), 1e-6);
  EXPECT_FALSE(v.cost_is_upper_bound);
  EXPECT_TRUE(v.refresh_error.empty());
  EXPECT_TRUE(t.cloud.Calls().empty()) << "status without refresh asks no one";
}

TEST(FleetStatus, SpotCostIsAnUpperBound) {
  TestWorld t;
  ASSERT_EQ(t.Up(t.Spec(OneNode("spot"))).nodes[0].status, Status::Ok());
  t.clock.Advance(hours(3));

  Result<FleetStatusReport> views = FleetStatus(t.world, t.catalog, {});

  ASSERT_TRUE(views.ok());
  const NodeView& v = views->nodes.front();
  ASSERT_TRUE(v.cost_usd);
  // v4 has one priced region, so the spot range is its spot price: 0.9215 USD/chip-hour.
  EXPECT_NEAR(*v.cost_usd, 0.9215 * 16 * Hours(v.age), 1e-6);
  EXPECT_TRUE(v.cost_is_upper_bound);
}

TEST(FleetStatus, UnknownNodeIsNotFound) {
  TestWorld t;
  ASSERT_EQ(t.Up(t.Spec(OneNode("spot"))).nodes[0].status, Status::Ok());
  StatusOptions options;
  options.nodes = {"nope"};
  Result<FleetStatusReport> views = FleetStatus(t.world, t.catalog, options);
  EXPECT_EQ(views.status().code(), StatusCode::kNotFound);
  options.nodes = {"trainer"};
  EXPECT_EQ(FleetStatus(t.world, t.catalog, options)->nodes.size(), 1u);
}

TEST(FleetStatus, RefreshSeesAPreemption) {
  TestWorld t;
  ASSERT_EQ(t.Up(t.Spec(OneNode("spot"))).nodes[0].status, Status::Ok());
  t.cloud.Preempt(kZoneB, "trainer");
  t.cloud.ClearCalls();
  StatusOptions refresh;
  refresh.refresh = true;

  Result<FleetStatusReport> views = FleetStatus(t.world, t.catalog, refresh);

  ASSERT_TRUE(views.ok()) << views.status().ToString();
  EXPECT_EQ(views->nodes.front().record.state, NodeState::kPreempted);
  // The husk holds its VMs until deleted: status prices it as serve's ledger counts it.
  EXPECT_TRUE(views->nodes.front().cost_usd) << "a preempted husk still costs";
  EXPECT_EQ(t.Record("trainer").state, NodeState::kPreempted);
  std::vector<EventRecord> events = t.Events("preempted", "trainer");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].detail, "zone=us-central2-b state=PREEMPTED");
  EXPECT_EQ(t.cloud.mutating_calls(), 0);

  // Seen once, logged once.
  ASSERT_TRUE(FleetStatus(t.world, t.catalog, refresh).ok());
  EXPECT_EQ(t.Events("preempted", "trainer").size(), 1u);
}

// A disk attached or detached by someone else (gcloud's attach-disk): a refresh records
// what the cloud says, so plain status shows it after (issue 15).
TEST(FleetStatus, RefreshRecordsTheDataDisks) {
  TestWorld t;
  ASSERT_EQ(t.Up(t.Spec(OneNode("spot"))).nodes[0].status, Status::Ok());
  std::vector<NodeDisk> disks = {{"projects/p/zones/us-central2-b/disks/data", "read-only"}};
  t.cloud.SetDataDisks(kZoneB, "trainer", disks);
  StatusOptions refresh;
  refresh.refresh = true;
  ASSERT_TRUE(FleetStatus(t.world, t.catalog, refresh).ok());
  EXPECT_EQ(t.Record("trainer").data_disks, disks);
  t.cloud.SetDataDisks(kZoneB, "trainer", {});
  ASSERT_TRUE(FleetStatus(t.world, t.catalog, refresh).ok());
  EXPECT_TRUE(t.Record("trainer").data_disks.empty());
}

TEST(FleetStatus, APreemptionSeenByStatusAndThenUpIsOneEvent) {
  TestWorld t;
  FleetSpec spec = t.Spec(OneNode("spot"));
  ASSERT_EQ(t.Up(spec).nodes[0].status, Status::Ok());
  t.cloud.Preempt(kZoneB, "trainer");
  StatusOptions refresh;
  refresh.refresh = true;
  ASSERT_TRUE(FleetStatus(t.world, t.catalog, refresh).ok());

  ASSERT_EQ(t.Up(spec).nodes[0].status, Status::Ok());

  EXPECT_EQ(t.Events("preempted", "trainer").size(), 1u);
  EXPECT_EQ(t.Record("trainer").state, NodeState::kReady);
}

TEST(FleetStatus, RefreshSeesAVanishedNode) {
  TestWorld t;
  ASSERT_EQ(t.Up(t.Spec(OneNode("spot"))).nodes[0].status, Status::Ok());
  t.cloud.Vanish(kZoneB, "trainer");
  StatusOptions refresh;
  refresh.refresh = true;

  Result<FleetStatusReport> views = FleetStatus(t.world, t.catalog, refresh);

  ASSERT_TRUE(views.ok()) << views.status().ToString();
  EXPECT_EQ(views->nodes.front().record.state, NodeState::kNotFound);
  EXPECT_EQ(t.Record("trainer").state, NodeState::kNotFound);
  EXPECT_EQ(t.Events("vanished", "trainer").size(), 1u);
  ASSERT_TRUE(FleetStatus(t.world, t.catalog, refresh).ok());
  EXPECT_EQ(t.Events("vanished", "trainer").size(), 1u);
}

// Found by the serve soak: `jobs` and ssh-proxy refresh a node they cannot reach, and a
// refresh that wrote "as of now" on a create serve had sent (killed before the cloud
// listed it) kept serve's kInFlightGrace from ever running out.
TEST(Issue14, ARefreshLeavesTheTimeOfACreateNotListedYet) {
  TestWorld t;
  ASSERT_EQ(t.Up(t.Spec(OneNode("spot"))).nodes[0].status, Status::Ok());
  t.cloud.Vanish(kZoneB, "trainer");
  NodeRecord r = t.Record("trainer");
  r.state = NodeState::kRequested;
  Clock::WallTime requested = r.updated_at = t.clock.Now();
  ASSERT_TRUE(t.store->PutNode(r).ok());
  t.clock.Advance(std::chrono::minutes(1));
  StatusOptions refresh;
  refresh.refresh = true;

  ASSERT_TRUE(FleetStatus(t.world, t.catalog, refresh).ok());

  EXPECT_EQ(t.Record("trainer").state, NodeState::kRequested);
  EXPECT_EQ(t.Record("trainer").updated_at, requested);
}

TEST(FleetStatus, RefreshSeesAQueuedResourceThatGaveUp) {
  TestWorld t;
  UpOptions quick;
  quick.timeout = std::chrono::seconds(30);
  t.cloud.SetQueuedWaitPolls(1000);  // still waiting when up gives up
  ASSERT_EQ(t.Up(t.Spec(OneNode("spot") + "    queued: true\n"), quick).nodes[0].status.code(),
            StatusCode::kTimeout);
  ASSERT_EQ(t.Record("trainer").state, NodeState::kQueued);
  t.cloud.SetQueuedWaitPolls(0);
  t.cloud.SetQueuedFailure(FailedPreconditionError("valid_until passed"));
  StatusOptions refresh;
  refresh.refresh = true;

  Result<FleetStatusReport> views = FleetStatus(t.world, t.catalog, refresh);

  ASSERT_TRUE(views.ok()) << views.status().ToString();
  EXPECT_EQ(views->nodes.front().record.state, NodeState::kFailed);
  EXPECT_EQ(views->nodes.front().record.health, "valid_until passed");
  EXPECT_FALSE(views->nodes.front().cost_usd) << "a queued resource that gave up costs nothing";
  EXPECT_EQ(t.Events("queue-failed", "trainer").size(), 1u);
}

TEST(FleetStatus, RefreshErrorIsShownPerNodeNotFatal) {
  TestWorld t;
  ASSERT_EQ(t.Up(t.Spec(OneNode("spot"))).nodes[0].status, Status::Ok());
  t.cloud.FailNext("ListNodes", UnavailableError("503 backend unavailable"));
  StatusOptions refresh;
  refresh.refresh = true;

  Result<FleetStatusReport> views = FleetStatus(t.world, t.catalog, refresh);

  ASSERT_TRUE(views.ok()) << views.status().ToString();
  EXPECT_EQ(views->nodes.front().refresh_error, "503 backend unavailable");
  EXPECT_EQ(views->nodes.front().record.state, NodeState::kReady) << "the stored view stands";
}

}  // namespace
}  // namespace tpufleet
