#include "control/up.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "control/testing/test_world.h"
#include "control/testing/up_specs.h"
#include "core/zone_choice.h"
#include "util/file.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

using testing::Contains;
using testing::kAliceKey;
using testing::kBobKey;
using testing::kProject;
using testing::kZoneA;
using testing::kZoneB;
using testing::SmallNode;
using testing::TestWorld;
using testing::Trainer;

std::string FleetPublicKey(TestWorld& t) { return t.FleetPublicKey(); }

// ---------------------------------------------------------------------------------------
// Creating, zone failover and the SSH files.

TEST(Up, StockoutInFirstZoneCreatesInTheNext) {
  TestWorld t;
  t.cloud.SetStockout(kZoneB);

  UpReport r = t.Up(t.Spec(Trainer()));

  ASSERT_EQ(r.nodes.size(), 1u);
  EXPECT_EQ(r.nodes[0].node, "trainer");
  EXPECT_EQ(r.nodes[0].status, Status::Ok());
  EXPECT_TRUE(r.nodes[0].changed);
  EXPECT_FALSE(t.cloud.Node(kZoneB, "trainer"));
  std::optional<CloudNode> node = t.cloud.Node(kZoneA, "trainer");
  ASSERT_TRUE(node);
  EXPECT_EQ(node->state, NodeState::kReady);
  EXPECT_EQ(node->capacity, Capacity::kSpot);
  EXPECT_EQ(node->labels.at("tpufleet-fleet"), "lab");
  EXPECT_EQ(t.cloud.creates(), 2);

  std::vector<EventRecord> stockouts = t.Events("stockout");
  ASSERT_EQ(stockouts.size(), 1u);
  EXPECT_EQ(stockouts[0].node, "trainer");
  EXPECT_TRUE(Contains(stockouts[0].detail, "zone=us-central2-b")) << stockouts[0].detail;
  EXPECT_TRUE(Contains(stockouts[0].detail, "type=v4-32")) << stockouts[0].detail;
  EXPECT_TRUE(t.progress.Saw("trainer", NodePhase::kStockout));
  EXPECT_EQ(t.Events("ready", "trainer").size(), 1u);

  NodeRecord rec = t.Record("trainer");
  EXPECT_EQ(rec.fleet, "lab");
  EXPECT_EQ(rec.zone, kZoneA);
  EXPECT_EQ(rec.state, NodeState::kReady);
  EXPECT_EQ(rec.capacity, "spot");
  EXPECT_EQ(rec.type, "v4-32");
  EXPECT_EQ(rec.login, "tester");
  EXPECT_EQ(rec.cloud_name, "projects/lab-project/locations/us-central2-a/nodes/trainer");
  ASSERT_EQ(rec.workers.size(), 4u);
  std::set<std::string> keys;
  std::string known_hosts = t.KnownHosts();
  for (int i = 0; i < 4; ++i) {
    const WorkerRecord& w = rec.workers[i];
    EXPECT_EQ(w.index, i);
    EXPECT_EQ(w.address, node->workers[i].address);
    EXPECT_TRUE(StartsWith(w.address, "198.18.")) << w.address;
    EXPECT_EQ(CheckSshPublicKey(w.host_key), Status::Ok()) << w.host_key;
    keys.insert(w.host_key);
    EXPECT_TRUE(Contains(known_hosts, w.address + " " + w.host_key + "\n")) << known_hosts;
  }
  EXPECT_EQ(keys.size(), 4u) << "each worker has its own host key";

  std::string config = t.SshConfig();
  for (const char* alias : {"trainer", "trainer-w0", "trainer-w1", "trainer-w2", "trainer-w3"}) {
    EXPECT_TRUE(Contains(config, std::string("Host ") + alias + "\n")) << alias << "\n" << config;
  }
  EXPECT_TRUE(Contains(config, "Host trainer\n  HostName " + rec.workers[0].address + "\n"));
  EXPECT_TRUE(Contains(config, "Host trainer-w3\n  HostName " + rec.workers[3].address + "\n"));
  EXPECT_TRUE(Contains(config, "  User tester\n"));
  EXPECT_TRUE(Contains(config, "  IdentityFile " + t.world.paths.ssh_dir + "/id_ed25519\n"));
  // Each rewrite also makes ~/.ssh/config include the config (SshFileDir's test).
  EXPECT_GT(t.ssh_files.rewrites(), 0);
}

TEST(Up, SecondUpChangesNothing) {
  TestWorld t;
  FleetSpec spec = t.Spec(Trainer(SmallNode("eval", "    count: 2\n")));
  UpReport first = t.Up(spec);
  ASSERT_EQ(first.nodes.size(), 3u);
  for (const NodeOutcome& o : first.nodes) {
    EXPECT_EQ(o.status, Status::Ok()) << o.node;
  }
  t.cloud.ClearCalls();

  UpReport second = t.Up(spec);

  ASSERT_EQ(second.nodes.size(), 3u);
  EXPECT_EQ(second.nodes[0].node, "trainer");
  EXPECT_EQ(second.nodes[1].node, "eval-0");
  EXPECT_EQ(second.nodes[2].node, "eval-1");
  for (const NodeOutcome& o : second.nodes) {
    EXPECT_EQ(o.status, Status::Ok()) << o.node;
    EXPECT_FALSE(o.changed) << o.node;
  }
  EXPECT_EQ(t.cloud.mutating_calls(), 0);
  EXPECT_TRUE(second.not_in_spec.empty());
  EXPECT_EQ(t.Records("lab").size(), 3u);
  EXPECT_EQ(t.Events("create-requested").size(), 3u);
  EXPECT_EQ(t.Events("ready").size(), 3u) << "no second ready event for a kept node";
}

TEST(Up, NodesLeftOutOfTheSpecAreReportedNotDeleted) {
  TestWorld t;
  ASSERT_EQ(t.Up(t.Spec(Trainer(SmallNode("eval")))).nodes.size(), 2u);
  t.cloud.ClearCalls();

  UpReport r = t.Up(t.Spec(Trainer()));

  EXPECT_EQ(r.not_in_spec, std::vector<std::string>{"eval"});
  EXPECT_EQ(t.cloud.deletes(), 0);
  EXPECT_TRUE(t.cloud.Node(kZoneB, "eval"));
}

TEST(Up, NextUpStartsWhereCapacityWasAndForgetsAfterAnHour) {
  TestWorld t;
  t.cloud.SetStockout(kZoneB);
  ASSERT_EQ(t.Up(t.Spec(Trainer())).nodes[0].status, Status::Ok());
  t.cloud.SetStockout(kZoneB, false);

  // A new node of the same type goes first to the zone that had capacity.
  FleetSpec two = t.Spec(Trainer("  - name: second\n    type: v4-32\n"
                       "    zones: [us-central2-b, us-central2-a]\n"));
  Result<UpPlan> plan = PlanUp(two, t.catalog, t.world);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->nodes.at(1).zones, (std::vector<std::string>{kZoneA, kZoneB}));
  t.cloud.ClearCalls();
  ASSERT_EQ(t.Up(two).nodes[1].status, Status::Ok());
  ASSERT_EQ(t.cloud.creates(), 1);
  EXPECT_TRUE(t.cloud.Node(kZoneA, "second"));

  // Another type is not affected by v4-32's stockout.
  FleetSpec small = t.Spec(Trainer(SmallNode("small")));
  plan = PlanUp(small, t.catalog, t.world);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->nodes.at(1).zones, (std::vector<std::string>{kZoneB, kZoneA}));

  // An hour later the spec's order is back.
  t.clock.Advance(kStockoutMemory + std::chrono::minutes(1));
  FleetSpec three = t.Spec(Trainer("  - name: third\n    type: v4-32\n"
                                   "    zones: [us-central2-b, us-central2-a]\n"));
  plan = PlanUp(three, t.catalog, t.world);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->nodes.at(1).zones, (std::vector<std::string>{kZoneB, kZoneA}));
  ASSERT_EQ(t.Up(three).nodes[1].status, Status::Ok());
  EXPECT_TRUE(t.cloud.Node(kZoneB, "third"));
}

TEST(Up, ANodeOutsideTheSpecsZonesNowIsKeptNotLeaked) {
  // The spec dropped the zone the node is in: up keeps tracking that node rather than
  // making a second one and forgetting the first (which would bill on, untracked).
  TestWorld t;
  ASSERT_EQ(t.Up(t.Spec(Trainer())).nodes[0].status, Status::Ok());
  ASSERT_EQ(t.Record("trainer").zone, kZoneB);
  t.cloud.ClearCalls();
  FleetSpec moved = t.Spec(std::string("fleet: lab\nproject: ") + kProject +
                           "\nnodes:\n  - name: trainer\n    type: v4-32\n"
                           "    zones: [us-central2-a]\n    capacity: spot\n");

  UpReport r = t.Up(moved);

  EXPECT_EQ(r.nodes[0].status, Status::Ok());
  EXPECT_EQ(t.cloud.creates(), 0);
  EXPECT_EQ(t.cloud.AllNodes().size(), 1u);
  EXPECT_EQ(t.Record("trainer").zone, kZoneB);
}

TEST(Up, StockoutEverywhereSaysSoAndTheNextUpTriesAgain) {
  TestWorld t;
  t.cloud.SetStockout(kZoneB);
  t.cloud.SetStockout(kZoneA);
  FleetSpec spec = t.Spec(Trainer());

  UpReport r = t.Up(spec);

  EXPECT_EQ(r.nodes[0].status.code(), StatusCode::kResourceExhausted);
  const std::string& msg = r.nodes[0].status.message();
  EXPECT_TRUE(Contains(msg, "us-central2-b, us-central2-a")) << msg;
  EXPECT_TRUE(Contains(msg, "There is no more capacity")) << msg;
  EXPECT_EQ(t.Events("stockout").size(), 2u);
  EXPECT_EQ(t.Record("trainer").state, NodeState::kStockout);
  EXPECT_TRUE(t.cloud.AllNodes().empty());

  t.cloud.SetStockout(kZoneA, false);
  EXPECT_EQ(t.Up(spec).nodes[0].status, Status::Ok());
  EXPECT_TRUE(t.cloud.Node(kZoneA, "trainer"));
}

TEST(Up, CreateThatNeverReachedTheCloudIsMadeByTheNextUp) {
  TestWorld t;
  FleetSpec spec = t.Spec(Trainer());
  t.cloud.FailNext("CreateNode", UnavailableError("connection refused"));
  EXPECT_EQ(t.Up(spec).nodes[0].status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(t.Record("trainer").state, NodeState::kRequested);

  EXPECT_EQ(t.Up(spec).nodes[0].status, Status::Ok());
  EXPECT_EQ(t.cloud.creates(), 2);
  EXPECT_EQ(t.cloud.AllNodes().size(), 1u);
}

// ---------------------------------------------------------------------------------------
// Errors from the cloud.

TEST(Up, QuotaErrorStopsWithTheApiMessage) {
  TestWorld t;
  Status quota = FailedPreconditionError(
      "Quota 'TPUV4PodPerProjectPerZoneForTPUAPI' exhausted. Limit 0 in zone us-central2-b");
  t.cloud.SetCreateError(kZoneB, quota);

  UpReport r = t.Up(t.Spec(Trainer()));

  EXPECT_EQ(r.nodes[0].status, quota);
  EXPECT_TRUE(t.Events("stockout").empty());
  EXPECT_EQ(t.cloud.creates(), 1) << "no other zone is tried";
  EXPECT_TRUE(t.cloud.AllNodes().empty());
}

TEST(Up, RefusedCreateLeavesNoRecordBehind) {
  TestWorld t;
  t.cloud.SetCreateError(kZoneB, FailedPreconditionError("Quota exceeded"));

  t.Up(t.Spec(Trainer()));

  EXPECT_TRUE(t.Records().empty()) << "status must not show a node the API refused";
}

TEST(Up, CreateWhoseAnswerWasLostIsAdoptedNotRepeated) {
  TestWorld t;
  FleetSpec spec = t.Spec(Trainer());
  t.cloud.FailNext("CreateNode", UnavailableError("connection reset by peer"),
                   FakeCloud::When::kAfterEffect);

  UpReport first = t.Up(spec);
  EXPECT_EQ(first.nodes[0].status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(t.Record("trainer").zone, kZoneB) << "the zone asked is on record";

  UpReport second = t.Up(spec);

  EXPECT_EQ(second.nodes[0].status, Status::Ok());
  EXPECT_EQ(t.cloud.creates(), 1);
  EXPECT_EQ(t.cloud.AllNodes().size(), 1u);
  EXPECT_EQ(t.Record("trainer").state, NodeState::kReady);
  EXPECT_EQ(t.Record("trainer").workers.size(), 4u);
}

// ---------------------------------------------------------------------------------------
// Queued resources.

TEST(Up, QueuedNodeWaitsForCapacity) {
  TestWorld t;
  t.cloud.SetQueuedWaitPolls(3);

  UpReport r = t.Up(t.Spec(Trainer("    queued: true\n")));

  EXPECT_EQ(r.nodes[0].status, Status::Ok());
  EXPECT_EQ(t.cloud.creates(), 1);
  EXPECT_EQ(t.cloud.CallCount("GetQueuedResource"), 4);
  std::optional<CloudQueuedResource> qr = t.cloud.Queued(kZoneB, "trainer");
  ASSERT_TRUE(qr);
  EXPECT_EQ(qr->state, NodeState::kActive);
  bool saw_waiting = false;
  for (const NodeProgress& p : t.progress.all()) {
    saw_waiting |= p.phase == NodePhase::kQueued && p.detail == "WAITING_FOR_RESOURCES";
  }
  EXPECT_TRUE(saw_waiting);
  NodeRecord rec = t.Record("trainer");
  EXPECT_EQ(rec.state, NodeState::kReady);
  EXPECT_EQ(rec.queued_resource,
            "projects/lab-project/locations/us-central2-b/queuedResources/trainer");
  EXPECT_EQ(rec.workers.size(), 4u);
}

TEST(Up, FailedQueuedResourceReportsItsError) {
  TestWorld t;
  Status failure = FailedPreconditionError(
      "The queued resource could not be provisioned before its valid_until time");
  t.cloud.SetQueuedWaitPolls(2);
  t.cloud.SetQueuedFailure(failure);

  UpReport r = t.Up(t.Spec(Trainer("    queued: true\n")));

  EXPECT_EQ(r.nodes[0].status, failure);
  EXPECT_TRUE(t.cloud.AllNodes().empty());
}

// A minute of up on a queued trainer, which times out while its queued resource waits.
FleetSpec UpThatTimesOutInTheQueue(TestWorld& t, const UpOptions& quick) {
  FleetSpec spec = t.Spec(Trainer("    queued: true\n"));
  t.cloud.SetQueuedWaitPolls(1000000);
  UpReport first = t.Up(spec, quick);
  EXPECT_EQ(first.nodes[0].status.code(), StatusCode::kTimeout);
  EXPECT_TRUE(Contains(first.nodes[0].status.message(), "WAITING_FOR_RESOURCES"))
      << first.nodes[0].status.message();
  EXPECT_EQ(t.Record("trainer").state, NodeState::kQueued);
  return spec;
}

TEST(Up, NextUpPicksUpAQueuedResourceStillWaiting) {
  TestWorld t;
  UpOptions quick;
  quick.timeout = std::chrono::minutes(1);
  FleetSpec spec = UpThatTimesOutInTheQueue(t, quick);

  // Capacity came: the next up waits on the same queued resource, no second request.
  t.cloud.SetQueuedWaitPolls(0);
  UpReport second = t.Up(spec, quick);
  EXPECT_EQ(second.nodes[0].status, Status::Ok());
  EXPECT_EQ(t.cloud.creates(), 1);
  EXPECT_EQ(t.Record("trainer").state, NodeState::kReady);
}

TEST(Up, NextUpReportsAQueuedResourceThatFailedWhileWaiting) {
  TestWorld t;
  UpOptions quick;
  quick.timeout = std::chrono::minutes(1);
  FleetSpec spec = UpThatTimesOutInTheQueue(t, quick);

  Status failure = FailedPreconditionError("queued resource ran past valid_until");
  t.cloud.SetQueuedWaitPolls(0);
  t.cloud.SetQueuedFailure(failure);
  UpReport second = t.Up(spec, quick);
  EXPECT_EQ(second.nodes[0].status, failure);
}

TEST(Up, QueuedCreateWhoseAnswerWasLostIsWaitedOn) {
  TestWorld t;
  FleetSpec spec = t.Spec(Trainer("    queued: true\n"));
  t.cloud.FailNext("CreateNode", UnavailableError("connection reset by peer"),
                   FakeCloud::When::kAfterEffect);
  EXPECT_EQ(t.Up(spec).nodes[0].status.code(), StatusCode::kUnavailable);

  UpReport second = t.Up(spec);

  EXPECT_EQ(second.nodes[0].status, Status::Ok());
  EXPECT_EQ(t.cloud.creates(), 1);
  EXPECT_TRUE(t.cloud.Node(kZoneB, "trainer"));
}

TEST(Up, PreemptedQueuedNodeIsRemadeThroughANewQueuedResource) {
  TestWorld t;
  FleetSpec spec = t.Spec(Trainer("    queued: true\n"));
  ASSERT_EQ(t.Up(spec).nodes[0].status, Status::Ok());
  t.cloud.Preempt(kZoneB, "trainer");
  t.cloud.ClearCalls();

  UpReport r = t.Up(spec);

  EXPECT_EQ(r.nodes[0].status, Status::Ok());
  EXPECT_EQ(t.cloud.CallCount("DeleteQueuedResource"), 1);
  EXPECT_EQ(t.cloud.creates(), 1);
  EXPECT_EQ(t.cloud.Node(kZoneB, "trainer")->state, NodeState::kReady);
}

// ---------------------------------------------------------------------------------------
// Users and ssh-keys.

TEST(Up, UsersGoIntoSshKeysAndAChangeRekeysOnce) {
  TestWorld t;
  std::string users_alice = std::string("users:\n  - name: alice\n    keys: [\"") + kAliceKey +
                            "\"]\n";
  std::string head = std::string("fleet: lab\nproject: ") + kProject + "\n";
  std::string nodes = "nodes:\n" + SmallNode("box");
  FleetSpec spec = t.Spec(head + users_alice + nodes);

  ASSERT_EQ(t.Up(spec).nodes[0].status, Status::Ok());

  std::string fleet_key = FleetPublicKey(t);
  std::string want = "tester:" + fleet_key + "\nalice:" + kAliceKey;
  EXPECT_EQ(SshKeysMetadata("tester", fleet_key, spec.users), want);
  EXPECT_EQ(t.cloud.Node(kZoneB, "box")->metadata.at("ssh-keys"), want);
  EXPECT_EQ(t.cloud.ssh_key_sets(), 0) << "the keys went in with the create";

  std::string users_both = users_alice + "  - name: bob\n    keys: [\"" + kBobKey + "\"]\n";
  FleetSpec changed = t.Spec(head + users_both + nodes);
  UpReport r = t.Up(changed);
  EXPECT_EQ(r.nodes[0].status, Status::Ok());
  EXPECT_TRUE(r.nodes[0].changed);
  EXPECT_EQ(t.cloud.ssh_key_sets(), 1);
  EXPECT_EQ(t.cloud.Node(kZoneB, "box")->metadata.at("ssh-keys"),
            want + "\nbob:" + kBobKey);

  EXPECT_FALSE(t.Up(changed).nodes[0].changed);
  EXPECT_EQ(t.cloud.ssh_key_sets(), 1);
}

// A node stopped (by serve's idle policy, or by hand) is started by `up`, as the spec
// wants it: started (not deleted nor recreated), an event says so, and the record takes
// the node READY again. The dry run names the start.
TEST(Up, AStoppedNodeIsStarted) {
  TestWorld t;
  FleetSpec spec =
      t.Spec(std::string("fleet: lab\nproject: ") + kProject + "\nnodes:\n" + SmallNode("eval"));
  t.Up(spec);
  t.cloud.SetState(kZoneB, "eval", NodeState::kStopped);
  t.cloud.ClearCalls();
  UpReport r = t.Up(spec);
  EXPECT_EQ(r.nodes[0].status, Status::Ok());
  EXPECT_TRUE(r.nodes[0].changed);
  EXPECT_EQ(t.cloud.starts(), 1);
  EXPECT_EQ(t.cloud.creates() + t.cloud.deletes(), 0);
  EXPECT_EQ(t.cloud.Node(kZoneB, "eval")->state, NodeState::kReady);
  EXPECT_EQ(t.Record("eval").state, NodeState::kReady);
  EXPECT_EQ(t.Events("started", "eval").size(), 1u);
  t.cloud.ClearCalls();
  EXPECT_FALSE(t.Up(spec).nodes[0].changed);
  EXPECT_EQ(t.cloud.starts(), 0);
}

TEST(Up, TheRecordCarriesTheSpecsLabelsAlsoForAKeptNode) {
  TestWorld t;
  ASSERT_EQ(t.Up(t.Spec(Trainer("    labels: {team: nlp, role: train}\n"))).nodes[0].status,
            Status::Ok());
  EXPECT_EQ(t.Record("trainer").labels,
            (std::map<std::string, std::string>{{"team", "nlp"}, {"role", "train"}}))
      << "tpufleet's own fleet label is not the user's to select by";

  // Kept as it is (labels are not what a node is made of), and the record follows the spec.
  t.cloud.ClearCalls();
  UpReport kept = t.Up(t.Spec(Trainer("    labels: {team: vision}\n")));
  EXPECT_EQ(kept.nodes[0].status, Status::Ok());
  EXPECT_EQ(t.cloud.creates() + t.cloud.deletes(), 0);
  EXPECT_EQ(t.Record("trainer").labels,
            (std::map<std::string, std::string>{{"team", "vision"}}));

  UpReport none = t.Up(t.Spec(Trainer()));
  EXPECT_EQ(none.nodes[0].status, Status::Ok());
  EXPECT_TRUE(t.Record("trainer").labels.empty());
}

}  // namespace
}  // namespace tpufleet
