#include "core/up_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/testing/catalog_fixtures.h"

namespace tpufleet {
namespace {

using std::chrono::minutes;
using Zones = std::vector<std::string>;

const Clock::WallTime kPlanNow = Clock::WallTime(std::chrono::hours(500000));
constexpr char kZoneA[] = "us-central2-a";
constexpr char kZoneB[] = "us-central2-b";

// Fleet "lab" with one node "trainer" (v4-8, zones a then b) and the plan's inputs,
// empty: a fresh machine and an empty cloud.
struct World {
  World() {
    fleet.name = "lab";
    fleet.project = "p";
    NodeSpec n;
    n.name = "trainer";
    n.names = {"trainer"};
    n.type = "v4-8";
    n.runtime_version = "tpu-ubuntu2204-base";
    n.zones = {kZoneA, kZoneB};
    n.setup = "pip install jax";
    fleet.nodes.push_back(n);
    in.now = kPlanNow;
  }

  NodeSpec& spec() { return fleet.nodes[0]; }

  // The fleet's record of "trainer", made from the spec as it is.
  NodeRecord& Record(const std::string& zone, NodeState state) {
    NodeRecord r;
    r.fleet = "lab";
    r.name = "trainer";
    r.provider = "gcp-tpu";
    r.zone = zone;
    r.type = spec().type;
    r.capacity = "on-demand";
    r.runtime_version = spec().runtime_version;
    r.spec_hash = SpecDigest(spec());
    r.state = state;
    r.request_id = "req-1";
    in.records.push_back(r);
    return in.records.back();
  }

  void Cloud(const std::string& zone, NodeState state, const std::string& label = "lab") {
    in.nodes.push_back({"trainer", zone, state, label});
  }

  NodePlan Plan() {
    std::vector<NodePlan> plans = PlanNodes(fleet, testing::BuiltinCatalog(), in);
    EXPECT_EQ(plans.size(), 1u);
    return plans.empty() ? NodePlan{} : plans[0];
  }

  FleetSpec fleet;
  PlanInputs in;
};

// ---- One decision each, as a table: the cloud's state of an existing node of ours.

TEST(PlanNodes, AnExistingNodeByItsState) {
  struct Row {
    NodeState state;
    PlanAction action;
    std::string detail;
  };
  const std::vector<Row> rows = {
      {NodeState::kReady, PlanAction::kKeep, ""},
      {NodeState::kCreating, PlanAction::kWait, ""},
      {NodeState::kRepairing, PlanAction::kWait, ""},
      {NodeState::kPreempted, PlanAction::kRecreate, "was PREEMPTED"},
      {NodeState::kTerminated, PlanAction::kRecreate, "was TERMINATED"},
      {NodeState::kStopped, PlanAction::kStart,
       "is STOPPED; up starts it (its boot disk and data are kept)"},
  };
  for (const Row& row : rows) {
    World w;
    w.Record(kZoneB, NodeState::kReady);
    w.Cloud(kZoneB, row.state);
    NodePlan p = w.Plan();
    EXPECT_EQ(p.action, row.action) << row.state.Name();
    EXPECT_EQ(p.detail, row.detail) << row.state.Name();
    EXPECT_EQ(p.zones, Zones{kZoneB});
    EXPECT_EQ(p.state, row.state);
    EXPECT_TRUE(p.exists);
  }
}

TEST(PlanNodes, NothingAnywhereIsCreatedInTheSpecsZoneOrderAndPriced) {
  World w;
  NodePlan p = w.Plan();
  EXPECT_EQ(p.action, PlanAction::kCreate);
  EXPECT_EQ(p.zones, (Zones{kZoneA, kZoneB}));
  EXPECT_FALSE(p.resume);
  EXPECT_FALSE(p.exists);
  EXPECT_NEAR(p.usd_per_hour, 12.88, 1e-3);  // 4 chips x $3.22, on demand
}

TEST(PlanNodes, ASpotNodeIsPricedAtTheTopOfItsSpotRange) {
  World w;
  w.spec().capacity = Capacity::kSpot;
  EXPECT_NEAR(w.Plan().usd_per_hour, 3.686, 1e-3);  // 4 chips x $0.9215
}

TEST(PlanNodes, AFoundNodeIsTakenFromItsRecordedZoneFirst) {
  World w;
  w.Record(kZoneB, NodeState::kReady);
  w.Cloud(kZoneA, NodeState::kReady);  // a stray of the same name in the other zone
  w.Cloud(kZoneB, NodeState::kReady);
  EXPECT_EQ(w.Plan().zones, Zones{kZoneB});
}

TEST(PlanNodes, ANodeOutsideTheSpecsZonesIsFoundWhereItsRecordSaysOnly) {
  World w;
  w.in.nodes.push_back({"trainer", "europe-west4-a", NodeState::kReady, "lab"});
  EXPECT_EQ(w.Plan().action, PlanAction::kCreate);  // not ours to find there

  World recorded;
  recorded.Record("europe-west4-a", NodeState::kReady);
  recorded.in.nodes.push_back({"trainer", "europe-west4-a", NodeState::kReady, "lab"});
  EXPECT_EQ(recorded.Plan().action, PlanAction::kKeep);
}

TEST(PlanNodes, AForeignNodeIsRefused) {
  World w;
  w.Cloud(kZoneA, NodeState::kReady, "");  // made by gcloud: no fleet label
  NodePlan p = w.Plan();
  EXPECT_EQ(p.action, PlanAction::kForeign);
  EXPECT_NE(p.detail.find("was not made by fleet lab"), std::string::npos) << p.detail;
  EXPECT_TRUE(p.exists);

  World other;
  other.Cloud(kZoneA, NodeState::kReady, "other-fleet");
  EXPECT_EQ(other.Plan().action, PlanAction::kForeign);
}

TEST(PlanNodes, ANameAnotherFleetRecordedIsRefused) {
  World w;
  w.Record(kZoneA, NodeState::kReady).fleet = "other";
  NodePlan p = w.Plan();
  EXPECT_EQ(p.action, PlanAction::kForeign);
  EXPECT_NE(p.detail.find("fleet other already has a node named trainer"), std::string::npos);
}

TEST(PlanNodes, ANodeMadeFromAnotherSpecDiffers) {
  World w;
  w.Record(kZoneA, NodeState::kReady).spec_hash = "0000000000000000";
  w.Cloud(kZoneA, NodeState::kReady);
  NodePlan p = w.Plan();
  EXPECT_EQ(p.action, PlanAction::kDiffers);
  EXPECT_NE(p.detail.find("tpufleet down trainer"), std::string::npos) << p.detail;
}

TEST(PlanNodes, ASetupEditIsNotADifferentNode) {
  World w;
  w.Record(kZoneA, NodeState::kReady);
  w.spec().setup = "pip install jax flax";
  w.Cloud(kZoneA, NodeState::kReady);
  EXPECT_EQ(w.Plan().action, PlanAction::kKeep);
}

// ---- Queued resources.

TEST(PlanNodes, AQueuedResourceIsWaitedForOrRecreatedWhenDead) {
  struct Row {
    NodeState state;
    PlanAction action;
  };
  for (const Row& row : std::vector<Row>{{NodeState::kWaitingForResources, PlanAction::kWait},
                                         {NodeState::kAccepted, PlanAction::kWait},
                                         {NodeState::kProvisioning, PlanAction::kWait},
                                         {NodeState::kFailed, PlanAction::kRecreate},
                                         {NodeState::kSuspended, PlanAction::kRecreate},
                                         {NodeState::kSuspending, PlanAction::kRecreate}}) {
    World w;
    w.spec().queued = QueuedSpec{};
    w.Record(kZoneA, NodeState::kQueued);
    w.in.queued.push_back({"trainer", kZoneA, row.state, ""});
    NodePlan p = w.Plan();
    EXPECT_EQ(p.action, row.action) << row.state.Name();
    EXPECT_EQ(p.zones, Zones{kZoneA});
    EXPECT_FALSE(p.exists);
  }
}

// ---- Resume after a kill, leftovers, stockouts.

TEST(PlanNodes, ACreateInFlightIsResumedInItsZoneFirst) {
  // A kill after the record said REQUESTED in zone b, before the node showed up.
  World w;
  w.Record(kZoneB, NodeState::kRequested);
  NodePlan p = w.Plan();
  EXPECT_EQ(p.action, PlanAction::kCreate);
  EXPECT_EQ(p.zones, (Zones{kZoneB, kZoneA}));
  EXPECT_TRUE(p.resume);
  EXPECT_EQ(p.detail, "resumes the create requested in us-central2-b");
}

TEST(PlanNodes, ResumeWinsOverTheStockoutMemory) {
  World w;
  w.Record(kZoneB, NodeState::kRequested);
  w.in.stockouts = {{"v4-8", kZoneB, kPlanNow - minutes(5)}};
  NodePlan p = w.Plan();
  EXPECT_EQ(p.zones, (Zones{kZoneB, kZoneA}));
  EXPECT_TRUE(p.resume);
}

TEST(PlanNodes, ACreateThatIsOverIsNotResumed) {
  for (NodeState over : {NodeState::kStockout, NodeState::kNotFound, NodeState::kDeleted}) {
    World w;
    w.Record(kZoneB, over);
    NodePlan p = w.Plan();
    EXPECT_EQ(p.zones, (Zones{kZoneA, kZoneB})) << over.Name();
    EXPECT_FALSE(p.resume) << over.Name();
  }
}

TEST(PlanNodes, ARecentStockoutPutsItsZoneLast) {
  World w;
  w.in.stockouts = {{"v4-8", kZoneA, kPlanNow - minutes(5)}};
  EXPECT_EQ(w.Plan().zones, (Zones{kZoneB, kZoneA}));
  w.in.stockouts = {{"v4-8", kZoneA, kPlanNow - minutes(61)}};  // forgotten
  EXPECT_EQ(w.Plan().zones, (Zones{kZoneA, kZoneB}));
  w.in.stockouts = {{"v5p-8", kZoneA, kPlanNow - minutes(5)}};  // another type
  EXPECT_EQ(w.Plan().zones, (Zones{kZoneA, kZoneB}));
}

TEST(PlanNodes, ALeftoverIsNeverAdoptedAndItsZoneNeverCreatedIn) {
  World w;
  LeftoverRecord x;
  x.fleet = "lab";
  x.name = "trainer";
  x.zone = kZoneA;
  w.in.leftovers = {x};
  w.Cloud(kZoneA, NodeState::kReady);  // the leftover itself
  NodePlan p = w.Plan();
  EXPECT_EQ(p.action, PlanAction::kCreate);
  EXPECT_EQ(p.zones, Zones{kZoneB});

  // Resume too stays out of a zone that holds a leftover.
  World resumed;
  resumed.Record(kZoneA, NodeState::kRequested);
  resumed.in.leftovers = {x};
  EXPECT_EQ(resumed.Plan().zones, Zones{kZoneB});

  x.zone = kZoneB;
  w.in.leftovers.push_back(x);
  p = w.Plan();
  EXPECT_TRUE(p.zones.empty());
  EXPECT_EQ(p.detail, "every zone still holds a leftover of trainer being deleted");
}

// ---- Setup versions (issue 11, fix 4).

TEST(Issue11, AnEditedSetupIsRerunOnTheWorkersThatRanAnotherVersion) {
  World w;
  NodeRecord& r = w.Record(kZoneA, NodeState::kReady);
  std::string old_digest = SetupDigest("pip install jax");
  r.workers = {{0, "a0", "h0", "k0", true, old_digest}, {1, "a1", "h1", "k1", true, old_digest}};
  w.Cloud(kZoneA, NodeState::kReady);
  NodePlan unchanged = w.Plan();
  EXPECT_EQ(unchanged.setup_reruns, 0);
  EXPECT_EQ(unchanged.detail, "");

  w.spec().setup = "pip install jax flax";
  NodePlan p = w.Plan();
  EXPECT_EQ(p.action, PlanAction::kKeep);
  EXPECT_EQ(p.setup_reruns, 2);
  EXPECT_EQ(p.detail, "setup changed: rerun on 2 workers");
}

TEST(Issue11, ASetupOfUnknownVersionIsRerunAndSaysWhy) {
  World w;
  NodeRecord& r = w.Record(kZoneA, NodeState::kReady);
  r.workers = {{0, "a0", "h0", "k0", true, ""}};  // set up before digests were recorded
  w.Cloud(kZoneA, NodeState::kReady);
  NodePlan p = w.Plan();
  EXPECT_EQ(p.setup_reruns, 1);
  EXPECT_EQ(p.detail,
            "setup version not recorded (set up by an older tpufleet): rerun on 1 worker");
}

TEST(Issue11, NeedsSetup) {
  std::string d = SetupDigest("echo hi");
  EXPECT_EQ(d.size(), 16u);
  EXPECT_NE(d, SetupDigest("echo hello"));
  EXPECT_FALSE(SetupDigest("").empty());                            // "" means "not recorded"
  EXPECT_TRUE(NeedsSetup({0, "", "", "", false, d}, "echo hi"));    // never ran
  EXPECT_FALSE(NeedsSetup({0, "", "", "", true, d}, "echo hi"));    // ran this one
  EXPECT_TRUE(NeedsSetup({0, "", "", "", true, d}, "echo hello"));  // ran another
  EXPECT_TRUE(NeedsSetup({0, "", "", "", true, ""}, "echo hi"));    // ran an unknown one
  EXPECT_FALSE(NeedsSetup({0, "", "", "", true, d}, ""));           // nothing to run any more
}

// ---- Which zones are listed.

TEST(PlanZones, TheSpecsZonesAndTheZonesItsRecordsName) {
  World w;
  w.Record("europe-west4-a", NodeState::kReady).queued_resource = "projects/p/x";
  NodeRecord other;
  other.fleet = "other";
  other.zone = "asia-east1-c";
  w.in.records.push_back(other);
  ZonesToList z = PlanZones(w.fleet, w.in.records);
  EXPECT_EQ(z.nodes, (Zones{kZoneA, kZoneB, "europe-west4-a"}));
  EXPECT_EQ(z.queued, Zones{"europe-west4-a"});  // no queued node in the spec
}

}  // namespace
}  // namespace tpufleet
