// Issue 10, finding 8: `up` must never leave a duplicate or an orphan. A stockout's
// leftover whose delete fails is remembered and deleted later; a create killed just after
// the call is resumed in its zone with its request id; a node with the fleet's label and
// no record is reported.
#include "control/leftovers.h"

#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "control/down.h"
#include "control/fleet_status.h"
#include "control/testing/test_world.h"
#include "control/up.h"

namespace tpufleet {
namespace {

using testing::kProject;
using testing::kZoneA;
using testing::kZoneB;
using testing::TestWorld;

// Fleet "lab": a spot v4-32 named trainer, zone b before zone a.
std::string TrainerSpec() {
  return std::string("fleet: lab\nproject: ") + kProject +
         "\nnodes:\n"
         "  - name: trainer\n"
         "    type: v4-32\n"
         "    zones: [us-central2-b, us-central2-a]\n"
         "    capacity: spot\n";
}

std::vector<LeftoverRecord> Leftovers(TestWorld& t) { return t.store->Leftovers("").value(); }

// Zone b is stocked out and keeps the failed node; deleting it fails once. Up creates
// trainer in zone a and must remember the node in zone b.
void UpPastAStockoutWhoseLeftoverStays(TestWorld& t) {
  t.cloud.SetStockout(kZoneB);
  t.cloud.SetStockoutLeavesNode();
  t.cloud.FailNext("DeleteNode", UnavailableError("503 backend unavailable"));

  UpReport r = t.Up(t.Spec(TrainerSpec()));

  ASSERT_EQ(r.nodes[0].status, Status::Ok());
  EXPECT_EQ(t.Record("trainer").zone, kZoneA);
  ASSERT_TRUE(t.cloud.Node(kZoneB, "trainer")) << "the leftover is still there";
  std::vector<LeftoverRecord> left = Leftovers(t);
  ASSERT_EQ(left.size(), 1u) << "a leftover that could not be deleted is remembered";
  EXPECT_EQ(left[0].name, "trainer");
  EXPECT_EQ(left[0].zone, kZoneB);
  EXPECT_EQ(left[0].reason, "stockout");
  EXPECT_EQ(left[0].last_error, "503 backend unavailable");
  ASSERT_EQ(r.leftovers_left.size(), 1u) << "up says so";
}

TEST(Issue10, AStockoutLeftoverWhoseDeleteFailsIsDeletedByTheNextUp) {
  TestWorld t;
  UpPastAStockoutWhoseLeftoverStays(t);
  t.clock.Advance(std::chrono::hours(2));
  t.cloud.ClearCalls();

  // status, from local state only, shows it and what it has cost.
  Result<FleetStatusReport> status = FleetStatus(t.world, t.catalog, {});
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_TRUE(t.cloud.Calls().empty()) << "status without --refresh asks nobody";
  ASSERT_EQ(status->leftovers.size(), 1u);
  EXPECT_EQ(status->leftovers[0].record.zone, kZoneB);
  ASSERT_TRUE(status->leftovers[0].cost_usd);
  EXPECT_GT(*status->leftovers[0].cost_usd, 0);

  UpReport second = t.Up(t.Spec(TrainerSpec()));

  EXPECT_EQ(second.nodes[0].status, Status::Ok());
  ASSERT_EQ(second.leftovers.size(), 1u);
  EXPECT_EQ(second.leftovers[0].status, Status::Ok());
  EXPECT_FALSE(t.cloud.Node(kZoneB, "trainer")) << "the leftover was deleted";
  EXPECT_TRUE(t.cloud.Node(kZoneA, "trainer"));
  EXPECT_TRUE(Leftovers(t).empty());
  EXPECT_TRUE(second.leftovers_left.empty());
  EXPECT_EQ(t.cloud.creates(), 0) << "the node itself was kept";
  EXPECT_EQ(t.Events("leftover-deleted", "trainer").size(), 1u);
}

TEST(Issue10, AStockoutLeftoverWhoseDeleteFailsIsDeletedByTheNextDown) {
  TestWorld t;
  UpPastAStockoutWhoseLeftoverStays(t);
  t.cloud.FailNext("DeleteNode", UnavailableError("503 again"));

  DownReport failed = Down(t.world, {}, {}, t.progress);  // nothing named: leftovers only

  ASSERT_EQ(failed.leftovers.size(), 1u);
  EXPECT_EQ(failed.leftovers[0].status.code(), StatusCode::kUnavailable);
  ASSERT_EQ(Leftovers(t).size(), 1u) << "a second failure forgets nothing";
  EXPECT_EQ(Leftovers(t)[0].last_error, "503 again");

  DownReport done = Down(t.world, {}, {}, t.progress);

  ASSERT_EQ(done.leftovers.size(), 1u);
  EXPECT_EQ(done.leftovers[0].status, Status::Ok());
  EXPECT_FALSE(t.cloud.Node(kZoneB, "trainer"));
  EXPECT_TRUE(t.cloud.Node(kZoneA, "trainer")) << "down deleted only the leftover";
  EXPECT_TRUE(Leftovers(t).empty());
  EXPECT_EQ(t.Records().size(), 1u);
}

// The first up's create in zone b landed, but the process died before it learned so
// (here: the answer was lost), and the API lists the new node only a little later.
// Meanwhile zone b stocked out for someone else, so the stockout memory now puts zone a
// first. The next up must look in zone b first and resume the create there with the
// same request id: no second node in zone a.
TEST(Issue10, ACreateKilledJustAfterTheCallIsResumedInItsZoneWithItsRequestId) {
  TestWorld t;
  FleetSpec spec = t.Spec(TrainerSpec());
  t.cloud.SetListLag(1);
  t.cloud.FailNext("CreateNode", UnavailableError("connection reset by peer"),
                   FakeCloud::When::kAfterEffect);
  ASSERT_EQ(t.Up(spec).nodes[0].status.code(), StatusCode::kUnavailable);
  NodeRecord asked = t.Record("trainer");
  ASSERT_EQ(asked.zone, kZoneB);
  ASSERT_EQ(asked.state, NodeState::kRequested);
  ASSERT_FALSE(asked.request_id.empty());
  ASSERT_TRUE(t.store
                  ->AddEvent({0, t.clock.Now(), "other", "x", "stockout",
                              "type=v4-32 zone=us-central2-b"})
                  .ok());
  t.cloud.ClearCalls();

  UpReport second = t.Up(spec);

  EXPECT_EQ(second.nodes[0].status, Status::Ok());
  EXPECT_FALSE(t.cloud.Node(kZoneA, "trainer")) << "a duplicate in the other zone";
  ASSERT_TRUE(t.cloud.Node(kZoneB, "trainer"));
  EXPECT_EQ(t.cloud.Node(kZoneB, "trainer")->state, NodeState::kReady);
  EXPECT_EQ(t.cloud.AllNodes().size(), 1u);
  NodeRecord rec = t.Record("trainer");
  EXPECT_EQ(rec.zone, kZoneB);
  EXPECT_EQ(rec.state, NodeState::kReady);
  EXPECT_EQ(rec.request_id, asked.request_id);
  for (const FakeCloudCall& c : t.cloud.Calls()) {
    if (c.method == "CreateNode") {
      EXPECT_EQ(c.zone, kZoneB);
      EXPECT_EQ(c.request_id, asked.request_id) << "the retried create reuses the id";
    }
  }
  EXPECT_TRUE(Leftovers(t).empty());
}

// A create whose outcome is unknown in a zone the spec dropped is superseded by a create
// elsewhere: whatever it made there is remembered as a leftover, never forgotten.
TEST(Issue10, ACreateSupersededElsewhereIsRememberedAsALeftover) {
  TestWorld t;
  t.cloud.SetListLag(1);
  t.cloud.FailNext("CreateNode", UnavailableError("connection reset by peer"),
                   FakeCloud::When::kAfterEffect);
  ASSERT_EQ(t.Up(t.Spec(TrainerSpec())).nodes[0].status.code(), StatusCode::kUnavailable);
  std::string only_a = TrainerSpec();
  only_a.replace(only_a.find("[us-central2-b, us-central2-a]"),
                 std::string("[us-central2-b, us-central2-a]").size(), "[us-central2-a]");

  UpReport second = t.Up(t.Spec(only_a));

  EXPECT_EQ(second.nodes[0].status, Status::Ok());
  EXPECT_EQ(t.Record("trainer").zone, kZoneA);
  std::vector<LeftoverRecord> left = Leftovers(t);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].zone, kZoneB);
  EXPECT_EQ(left[0].reason, "superseded");

  UpReport third = t.Up(t.Spec(only_a));
  ASSERT_EQ(third.leftovers.size(), 1u);
  EXPECT_EQ(third.leftovers[0].status, Status::Ok());
  EXPECT_FALSE(t.cloud.Node(kZoneB, "trainer"));
  EXPECT_TRUE(t.cloud.Node(kZoneA, "trainer"));
  EXPECT_TRUE(Leftovers(t).empty());
}

// What up deleted itself is no leftover: a failed queued resource remade in the other
// zone (the stockout memory now prefers it) records nothing to delete.
TEST(Issue10, AQueuedResourceDeletedAndRemadeElsewhereIsNoLeftover) {
  TestWorld t;
  FleetSpec spec = t.Spec(TrainerSpec() + "    queued: true\n");
  t.cloud.SetQueuedFailure(FailedPreconditionError("valid_until passed"));
  ASSERT_FALSE(t.Up(spec).nodes[0].status.ok());
  ASSERT_EQ(t.Record("trainer").state, NodeState::kRequested);
  ASSERT_TRUE(t.store
                  ->AddEvent({0, t.clock.Now(), "other", "x", "stockout",
                              "type=v4-32 zone=us-central2-b"})
                  .ok());
  t.cloud.SetQueuedFailure(Status::Ok());

  UpReport r = t.Up(spec);

  EXPECT_EQ(r.nodes[0].status, Status::Ok());
  EXPECT_FALSE(t.cloud.Queued(kZoneB, "trainer"));
  EXPECT_TRUE(t.cloud.Queued(kZoneA, "trainer"));
  EXPECT_TRUE(Leftovers(t).empty());
}

TEST(Issue10, AnUnrecordedNodeWithTheFleetLabelIsReportedByStatusRefreshAndUp) {
  TestWorld t;
  FleetSpec spec = t.Spec(TrainerSpec());
  ASSERT_EQ(t.Up(spec).nodes[0].status, Status::Ok());
  CreateNodeRequest stray;
  stray.zone = kZoneA;
  stray.node_id = "stray";
  stray.type = "v4-8";
  stray.labels = {{kFleetLabel, "lab"}};
  t.cloud.AddNode(stray);
  CreateNodeRequest duplicate = stray;
  duplicate.node_id = "trainer";
  t.cloud.AddNode(duplicate);
  CreateNodeRequest theirs = stray;  // another fleet, not in this store: not ours to report
  theirs.node_id = "colleague";
  theirs.labels = {{kFleetLabel, "their-fleet"}};
  t.cloud.AddNode(theirs);
  t.cloud.ClearCalls();

  Result<FleetStatusReport> local = FleetStatus(t.world, t.catalog, {});
  ASSERT_TRUE(local.ok());
  EXPECT_TRUE(local->untracked.empty());
  EXPECT_TRUE(t.cloud.Calls().empty()) << "status without --refresh asks nobody";

  StatusOptions refresh;
  refresh.refresh = true;
  Result<FleetStatusReport> fresh = FleetStatus(t.world, t.catalog, refresh);
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  // trainer's record is in zone b, so only zone b was listed: the stray nodes in zone a
  // are seen by up, which lists every zone of the spec.
  std::string untracked_names;
  for (const UntrackedNode& u : fresh->untracked) {
    untracked_names += u.name + "@" + u.zone + " ";
  }
  EXPECT_EQ(untracked_names, "") << "zone a was not listed";

  UpReport r = t.Up(spec);
  EXPECT_EQ(r.nodes[0].status, Status::Ok());
  ASSERT_EQ(r.untracked.size(), 2u);
  EXPECT_EQ(r.untracked[0].name, "stray");
  EXPECT_EQ(r.untracked[1].name, "trainer");
  for (const UntrackedNode& u : r.untracked) {
    EXPECT_EQ(u.zone, kZoneA);
    EXPECT_EQ(u.fleet, "lab");
    EXPECT_EQ(u.project, kProject);
    std::string m = UntrackedMessage(u);
    EXPECT_NE(m.find("untracked: " + u.name + " in us-central2-a carries fleet lab's label"),
              std::string::npos)
        << m;
  }
  EXPECT_TRUE(r.untracked[0].recorded_zone.empty());
  EXPECT_NE(UntrackedMessage(r.untracked[0]).find("tpufleet import"), std::string::npos);
  EXPECT_EQ(r.untracked[1].recorded_zone, kZoneB) << "a duplicate of the tracked trainer";
  EXPECT_NE(UntrackedMessage(r.untracked[1]).find("gcloud compute tpus tpu-vm delete trainer"),
            std::string::npos)
      << UntrackedMessage(r.untracked[1]);
  EXPECT_EQ(t.cloud.creates(), 0);
  EXPECT_EQ(t.cloud.deletes(), 0) << "untracked nodes are reported, never touched";
  EXPECT_TRUE(t.cloud.Node(kZoneA, "trainer"));
}

TEST(Issue10, StatusRefreshReportsAnUnrecordedNodeInTheZonesItLists) {
  TestWorld t;
  ASSERT_EQ(t.Up(t.Spec(TrainerSpec())).nodes[0].status, Status::Ok());
  CreateNodeRequest stray;
  stray.zone = kZoneB;  // where trainer is, so status --refresh lists it
  stray.node_id = "stray";
  stray.type = "v4-8";
  stray.labels = {{kFleetLabel, "lab"}};
  t.cloud.AddNode(stray);

  StatusOptions refresh;
  refresh.refresh = true;
  Result<FleetStatusReport> fresh = FleetStatus(t.world, t.catalog, refresh);

  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  ASSERT_EQ(fresh->untracked.size(), 1u);
  EXPECT_EQ(fresh->untracked[0].name, "stray");
  EXPECT_EQ(fresh->untracked[0].zone, kZoneB);
  EXPECT_EQ(fresh->nodes.size(), 1u);
}

// Which threads reported progress, and how often.
class ThreadsSeen final : public ProgressObserver {
 public:
  void OnProgress(const NodeProgress&) override {
    std::lock_guard<std::mutex> l(mu_);
    threads_.insert(std::this_thread::get_id());
    ++reports_;
  }
  std::set<std::thread::id> threads() const {
    std::lock_guard<std::mutex> l(mu_);
    return threads_;
  }
  int reports() const {
    std::lock_guard<std::mutex> l(mu_);
    return reports_;
  }

 private:
  mutable std::mutex mu_;
  std::set<std::thread::id> threads_;  // guarded by mu_
  int reports_ = 0;                    // guarded by mu_
};

// FinishLeftovers started a thread per leftover. Now one event loop on the caller's
// thread drives every deletion, their operation polls interleaved.
TEST(Issue11, LeftoversAreDeletedFromOneLoopWithNoThreadOfTheirOwn) {
  TestWorld t;
  t.cloud.SetOperationPolls(3);
  for (const char* name : {"a", "b", "c"}) {
    CreateNodeRequest made;
    made.zone = kZoneB;
    made.node_id = name;
    made.type = "v4-8";
    t.cloud.AddNode(made);
    LeftoverRecord x{"lab", name, kZoneB, false, "gcp-tpu", kProject, "v4-8", "spot", "stockout",
                     "", t.clock.Now()};
    ASSERT_EQ(t.store->PutLeftover(x), Status::Ok());
  }
  ThreadsSeen progress;
  auto start = t.clock.MonotonicNow();

  Result<std::vector<LeftoverOutcome>> r = FinishLeftovers(t.world, "lab", {}, progress);

  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 3u);
  for (const LeftoverOutcome& o : *r) {
    EXPECT_EQ(o.status, Status::Ok()) << o.leftover.name;
    EXPECT_FALSE(t.cloud.Node(kZoneB, o.leftover.name)) << o.leftover.name;
  }
  EXPECT_TRUE(Leftovers(t).empty());
  EXPECT_EQ(progress.reports(), 6) << "deleting, then deleted, for each";
  EXPECT_EQ(progress.threads(), std::set<std::thread::id>{std::this_thread::get_id()})
      << "no thread per leftover";
  // Three operations of three polls each, side by side: the time of one, not of three.
  EXPECT_LT(t.clock.MonotonicNow() - start, std::chrono::seconds(3));
}

}  // namespace
}  // namespace tpufleet
