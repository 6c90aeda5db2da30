#include "core/reconcile.h"

#include <gtest/gtest.h>

#include <string>

namespace tpufleet {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

const Clock::WallTime kNow = Clock::WallTime(hours(500000));
constexpr char kZone[] = "us-central2-b";

// Whether `text` contains `part`; on failure, shows both.
::testing::AssertionResult Says(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "\n  reason: " << text << "\n  lacks:  " << part;
}

// Whether `d` is `action` with `reason` (or, with `part`, a reason that contains it).
::testing::AssertionResult Is(const NodeDecision& d, NodeAction action, const std::string& reason,
                              bool part = false) {
  if (d.action != action) {
    return ::testing::AssertionFailure() << "\n  action: " << NodeActionName(d.action) << ", not "
                                         << NodeActionName(action) << "\n  reason: " << d.reason;
  }
  return part                 ? Says(d.reason, reason)
         : d.reason == reason ? ::testing::AssertionSuccess()
                              : ::testing::AssertionFailure()
                                    << "\n  reason: " << d.reason << "\n  wanted: " << reason;
}

// Whether `d` deletes the node for `why` (the delete-requested reason), saying `reason`.
::testing::AssertionResult Deletes(const NodeDecision& d, const std::string& why,
                                   const std::string& reason) {
  if (d.delete_reason != why) {
    return ::testing::AssertionFailure() << "\n  deleted for: " << d.delete_reason << ", not "
                                         << why << "\n  reason: " << d.reason;
  }
  return Is(d, NodeAction::kDelete, reason);
}

// A spot v4-32 pod "trainer" of fleet "lab", READY for an hour, listed this pass, its
// four agents answering and nothing to report: the quiet case every test changes.
class DecideTest : public ::testing::Test {
 protected:
  DecideTest() {
    spec.name = "trainer";
    spec.names = {"trainer"};
    spec.type = "v4-32";
    spec.workers = 4;
    spec.zones = {kZone};
    spec.capacity = Capacity::kSpot;
    facts.spec = &spec;
    NodeRecord r;
    r.fleet = "lab";
    r.name = "trainer";
    r.zone = kZone;
    r.type = "v4-32";
    r.capacity = "spot";
    r.state = NodeState::kReady;
    r.created_at = kNow - hours(1);
    r.updated_at = kNow - hours(1);
    facts.record = r;
    facts.listed = true;
    facts.cloud = CloudSighting{"trainer", kZone, NodeState::kReady, "lab"};
    facts.workers = 4;
  }

  NodeDecision Decide(Clock::WallTime now = kNow) { return DecideNode(facts, budget, now); }

  // The budget spent, with `action`.
  void SpendBudget(BudgetAction action) {
    budget.reached = true;
    budget.action = action;
    budget.why = "usd_per_day $10.00 reached";
  }

  NodeRecord& record() { return *facts.record; }
  void Unlisted() {  // listed, and the node was not there
    facts.cloud.reset();
  }

  NodeSpec spec;
  NodeFacts facts;
  BudgetState budget;
};

TEST_F(DecideTest, HealthyNodeIsLeftAlone) {
  NodeDecision d = Decide();
  EXPECT_TRUE(Is(d, NodeAction::kNone, ""));
  EXPECT_EQ(d.signal, "");
  EXPECT_EQ(d.maintenance, "");
}

TEST_F(DecideTest, NodeNotInTheSpecIsNeverTouched) {
  facts.spec = nullptr;
  facts.cloud->state = NodeState::kPreempted;  // not even a husk is deleted
  NodeDecision d = Decide();
  EXPECT_TRUE(Is(d, NodeAction::kNone, "not in the spec", /*part=*/true));
}

TEST_F(DecideTest, SshHostsAreNeverTouched) {
  spec.hosts = {"10.0.0.1"};
  facts.workers_preempted = 4;
  EXPECT_EQ(Decide().action, NodeAction::kNone);
}

TEST_F(DecideTest, PreemptedByApi) {
  facts.cloud->state = NodeState::kPreempted;
  NodeDecision d = Decide();
  EXPECT_EQ(d.action, NodeAction::kRecover);
  EXPECT_EQ(d.signal, "api");
  EXPECT_EQ(d.reason, "preempted (api: PREEMPTED)");
  EXPECT_EQ(d.capacity, Capacity::kSpot);

  facts.cloud->state = NodeState::kTerminated;  // maintenance or end of life: gone too
  d = Decide();
  EXPECT_TRUE(Is(d, NodeAction::kRecover, "terminated (api: TERMINATED)"));
}

TEST_F(DecideTest, PreemptedPerRecordWhenTheZoneWasNotListed) {
  facts.listed = false;
  facts.cloud.reset();
  record().state = NodeState::kPreempted;
  NodeDecision d = Decide();
  EXPECT_EQ(d.action, NodeAction::kRecover);
  EXPECT_EQ(d.signal, "api");
  EXPECT_TRUE(Says(d.reason, "as last listed"));
}

TEST_F(DecideTest, PreemptedByEveryAgentWhileApiSaysReady) {
  facts.workers_preempted = 4;
  NodeDecision d = Decide();
  EXPECT_EQ(d.action, NodeAction::kRecover);
  EXPECT_EQ(d.signal, "agents");
  EXPECT_EQ(d.reason, "preempted (all 4 agents' notice; api READY)");

  // The zone is listed every few passes; the agents need not wait for it.
  facts.listed = false;
  facts.cloud.reset();
  EXPECT_EQ(Decide().action, NodeAction::kRecover);
}

TEST_F(DecideTest, SomeAgentsAreNotEnough) {
  facts.workers_preempted = 3;
  facts.workers_unreachable = 1;  // the fourth says nothing, which is not "preempted"
  NodeDecision d = Decide();
  EXPECT_TRUE(
      Is(d, NodeAction::kNone, "preempted per 3 of 4 agents: waiting for the API", /*part=*/true));
}

TEST_F(DecideTest, AgentsDoNotOverruleAnApiThatSaysOtherwise) {
  facts.workers_preempted = 4;
  facts.cloud->state = NodeState::kRepairing;
  EXPECT_EQ(Decide().action, NodeAction::kNone);
}

TEST_F(DecideTest, VanishedNodeIsRecoveredFromTheSpec) {
  Unlisted();
  NodeDecision d = Decide();
  EXPECT_EQ(d.action, NodeAction::kRecover);
  EXPECT_EQ(d.signal, "vanished");
  EXPECT_EQ(d.reason, "vanished (recorded READY in us-central2-b, no longer listed there)");
  EXPECT_EQ(d.capacity, Capacity::kSpot);  // the spec's, not the dead node's
}

TEST_F(DecideTest, UnlistedZoneSaysNothing) {
  facts.listed = false;
  facts.cloud.reset();
  EXPECT_EQ(Decide().action, NodeAction::kNone);
}

TEST_F(DecideTest, NotFoundRecordIsVanished) {
  Unlisted();
  record().state = NodeState::kNotFound;  // a `status --refresh` saw it go
  EXPECT_EQ(Decide().signal, "vanished");
}

TEST_F(DecideTest, CreateInFlightIsWaitedFor) {
  Unlisted();
  record().state = NodeState::kRequested;
  record().updated_at = kNow - seconds(30);
  NodeDecision d = Decide();
  EXPECT_TRUE(Is(d, NodeAction::kNone, "create in flight (REQUESTED)"));
  // Long unlisted: a killed `up` or serve; sent again (same request id).
  record().updated_at = kNow - minutes(3);
  d = Decide();
  EXPECT_TRUE(Is(d, NodeAction::kCreate,
                 "create cut short (REQUESTED 3m ago, not listed); sending it again"));
}

TEST_F(DecideTest, RecoveryCutShortIsFinished) {
  Unlisted();
  record().state = NodeState::kDeleted;  // serve deleted the husk, then died
  NodeDecision d = Decide();
  EXPECT_EQ(d.action, NodeAction::kCreate);
  EXPECT_EQ(d.signal, "");  // no second preempted event
}

TEST_F(DecideTest, QueuedResource) {
  Unlisted();
  record().state = NodeState::kQueued;
  facts.queued_resource = CloudSighting{"trainer", kZone, NodeState::kWaitingForResources, "lab"};
  NodeDecision d = Decide();
  EXPECT_TRUE(Is(d, NodeAction::kNone, "queued (WAITING_FOR_RESOURCES)"));

  facts.queued_resource->state = NodeState::kFailed;
  d = Decide();
  EXPECT_EQ(d.action, NodeAction::kRecover);
  EXPECT_EQ(d.signal, "api");
  EXPECT_EQ(d.reason, "queued resource FAILED (api)");
}

TEST_F(DecideTest, NotCreatedYet) {
  Unlisted();
  facts.record.reset();
  NodeDecision d = Decide();
  EXPECT_TRUE(Is(d, NodeAction::kCreate, "not created yet"));
  EXPECT_EQ(d.capacity, Capacity::kSpot);
  // Without a listing it may exist where no one looked.
  facts.listed = false;
  EXPECT_EQ(Decide().action, NodeAction::kNone);
}

TEST_F(DecideTest, StockoutIsRetriedAfterAMinute) {
  Unlisted();
  record().state = NodeState::kStockout;
  record().updated_at = kNow - seconds(20);
  NodeDecision d = Decide();
  EXPECT_TRUE(Is(d, NodeAction::kNone, "stocked out; next try in 40s"));
  d = Decide(kNow + seconds(40));
  EXPECT_TRUE(Is(d, NodeAction::kCreate, "stocked out 1m ago; trying again"));
}

TEST_F(DecideTest, ForeignNodeIsLeftAlone) {
  facts.cloud->fleet_label = "other";
  facts.cloud->state = NodeState::kPreempted;
  NodeDecision d = Decide();
  EXPECT_TRUE(Is(d, NodeAction::kNone, "not made by this fleet", /*part=*/true));
  // Listed but never recorded: `import` adopts it, serve does not.
  facts.cloud->fleet_label = "lab";
  facts.record.reset();
  EXPECT_EQ(Decide().action, NodeAction::kNone);
}

TEST_F(DecideTest, MaintenanceIsNotedNeverRecreated) {
  facts.workers_maintenance = 2;
  NodeDecision d = Decide();
  EXPECT_EQ(d.action, NodeAction::kNone);
  EXPECT_EQ(d.maintenance, "agents");
  EXPECT_EQ(d.reason, "under maintenance (agents): waiting, not recreating");

  facts.workers_maintenance = 0;
  facts.cloud_health = "UNHEALTHY_MAINTENANCE";
  d = Decide();
  EXPECT_EQ(d.action, NodeAction::kNone);
  EXPECT_EQ(d.maintenance, "api");

  // Maintenance that ends the node (TERMINATED) is a loss like any other.
  facts.cloud->state = NodeState::kTerminated;
  d = Decide();
  EXPECT_EQ(d.action, NodeAction::kRecover);
  EXPECT_EQ(d.maintenance, "api");
}

TEST_F(DecideTest, UnreachableIsNotPreempted) {
  facts.workers_unreachable = 4;
  NodeDecision d = Decide();
  EXPECT_TRUE(Is(d, NodeAction::kNone, "all 4 workers unreachable (not recreated", /*part=*/true));
}

TEST_F(DecideTest, TtlWarnsThenDeletes) {
  spec.ttl = minutes(10);
  record().created_at = kNow - minutes(4);
  EXPECT_EQ(Decide().action, NodeAction::kNone);

  record().created_at = kNow - minutes(6);
  NodeDecision d = Decide();
  EXPECT_TRUE(Is(d, NodeAction::kWarnTtl, "ttl 10m: deleting in 4m"));
  facts.ttl_warned = true;  // once per incarnation
  EXPECT_EQ(Decide().action, NodeAction::kNone);

  record().created_at = kNow - minutes(10);
  d = Decide();
  EXPECT_TRUE(Deletes(d, "ttl", "ttl 10m reached"));
  // Past the ttl without a warning (serve was not running): deleted all the same.
  facts.ttl_warned = false;
  EXPECT_EQ(Decide().action, NodeAction::kDelete);
}

TEST_F(DecideTest, TtlShorterThanTheWarningWarnsAtOnce) {
  spec.ttl = minutes(2);
  record().created_at = kNow - seconds(10);
  NodeDecision d = Decide();
  EXPECT_TRUE(Is(d, NodeAction::kWarnTtl, "ttl 2m: deleting in 1m50s"));
  EXPECT_EQ(DecideNode(facts, budget, kNow, minutes(1)).action, NodeAction::kNone);
}

// A stopped node: nobody is logged in to warn of its ttl, but the ttl still deletes it.
TEST_F(DecideTest, AStoppedNodeIsNotWarnedOfItsTtlButDeletedAtIt) {
  spec.ttl = minutes(10);
  record().created_at = kNow - minutes(8);
  facts.cloud->state = NodeState::kStopped;
  EXPECT_EQ(Decide().action, NodeAction::kNone);
  record().created_at = kNow - minutes(10);
  EXPECT_TRUE(Deletes(Decide(), "ttl", "ttl 10m reached"));
}

TEST_F(DecideTest, IdleDelete) {
  spec.idle = IdlePolicy{minutes(2), IdleAction::kDelete};
  facts.idle_since = kNow - minutes(1);
  EXPECT_EQ(Decide().action, NodeAction::kNone);
  facts.idle_since = kNow - minutes(3);
  NodeDecision d = Decide();
  EXPECT_TRUE(Deletes(d, "idle", "idle for 3m (policy: delete after 2m)"));
  // Whatever the verdict says, a job, login or holder now wins.
  facts.in_use = true;
  EXPECT_EQ(Decide().action, NodeAction::kNone);
}

TEST_F(DecideTest, IdleStopIsForSingleHostNodes) {
  spec.type = "v4-8";
  spec.workers = 1;
  facts.workers = 1;
  spec.idle = IdlePolicy{minutes(2), IdleAction::kStop};
  facts.idle_since = kNow - minutes(5);
  NodeDecision d = Decide();
  EXPECT_TRUE(Is(d, NodeAction::kStop, "idle for 5m (policy: stop after 2m)"));
  // Stopped already: nothing more.
  facts.cloud->state = NodeState::kStopped;
  EXPECT_EQ(Decide().action, NodeAction::kNone);
  EXPECT_TRUE(Is(Decide(), NodeAction::kNone, "stopped: left alone until started", true));
  facts.cloud->state = NodeState::kStopping;
  EXPECT_EQ(Decide().action, NodeAction::kNone);
  facts.cloud->state = NodeState::kStopped;
  // A pod (the parser refuses `stop` there: fleet_spec_node_test.cc StopIsRefusedForPods)
  // is never stopped, and not deleted instead.
  facts.cloud->state = NodeState::kReady;
  spec.workers = 4;
  d = Decide();
  EXPECT_TRUE(Is(d, NodeAction::kNone, "a TPU pod cannot be stopped", /*part=*/true));
}

// The idle verdict as serve computes it from the agents' window summaries.
WindowSummary UnusedWindow(int64_t since_ms) {
  WindowSummary w;
  w.seconds = 60;
  w.samples = 60;
  w.duty_cycle_percent = 0;
  w.idle_since_unix_ms = since_ms;
  return w;
}

TEST(IdleSinceTest, EveryWorkerUnused) {
  // Workers' clock: 1,000,000 s; the last worker used until 200 s before.
  int64_t wnow = 1'000'000'000;
  std::vector<std::optional<WindowSummary>> w = {UnusedWindow(wnow - 900'000),
                                                 UnusedWindow(wnow - 200'000)};
  // In serve's clock: 200 s before serve's now, whatever the skew between the clocks.
  EXPECT_EQ(IdleSince(w, wnow, kNow), kNow - seconds(200));
}

TEST(IdleSinceTest, InputBoundOrSilentIsNeverIdle) {
  int64_t wnow = 1'000'000'000;
  WindowSummary starved = UnusedWindow(0);  // a job runs: not unused
  starved.duty_cycle_percent = 9;
  starved.input_bound_fraction = 0.9;
  starved.job = "j7";
  std::vector<std::optional<WindowSummary>> w = {UnusedWindow(wnow - 900'000), starved};
  EXPECT_EQ(IdleSince(w, wnow, kNow), std::nullopt);
  // A worker that did not answer may be working.
  w = {UnusedWindow(wnow - 900'000), std::nullopt};
  EXPECT_EQ(IdleSince(w, wnow, kNow), std::nullopt);
  EXPECT_EQ(IdleSince({}, wnow, kNow), std::nullopt);
}

TEST_F(DecideTest, InputBoundNodeIsNotIdle) {
  spec.idle = IdlePolicy{minutes(2), IdleAction::kDelete};
  int64_t wnow = 1'000'000'000;
  WindowSummary starved = UnusedWindow(0);
  starved.duty_cycle_percent = 9;
  starved.input_bound_fraction = 0.9;
  facts.idle_since = IdleSince({UnusedWindow(wnow - 3'600'000), starved}, wnow, kNow);
  EXPECT_EQ(facts.idle_since, std::nullopt);
  EXPECT_EQ(Decide().action, NodeAction::kNone);
}

TEST_F(DecideTest, BudgetHoldsCreates) {
  SpendBudget(BudgetAction::kStopCreating);
  Unlisted();
  facts.record.reset();
  NodeDecision d = Decide();
  EXPECT_TRUE(
      Is(d, NodeAction::kHold, "not created yet; not creating: usd_per_day $10.00 reached"));
}

TEST_F(DecideTest, BudgetDeletesTheHuskButDoesNotRecreate) {
  SpendBudget(BudgetAction::kStopCreating);
  facts.cloud->state = NodeState::kPreempted;  // bills until deleted
  NodeDecision d = Decide();
  EXPECT_TRUE(Deletes(d, "husk",
                      "preempted (api: PREEMPTED); deleting the husk, not recreating: "
                      "usd_per_day $10.00 reached"));
  EXPECT_EQ(d.signal, "api");
  // Nothing left to delete: held.
  Unlisted();
  d = Decide();
  EXPECT_EQ(d.action, NodeAction::kHold);
  EXPECT_EQ(d.signal, "vanished");
}

TEST_F(DecideTest, BudgetActions) {
  SpendBudget(BudgetAction::kStopCreating);
  EXPECT_EQ(Decide().action, NodeAction::kNone);  // running nodes keep running

  SpendBudget(BudgetAction::kDeleteSpot);
  NodeDecision d = Decide();
  EXPECT_TRUE(Deletes(d, "budget", "usd_per_day $10.00 reached → delete-spot"));
  // The incarnation's capacity counts: one made on demand by the fallback stays.
  record().capacity = "on-demand";
  EXPECT_EQ(Decide().action, NodeAction::kNone);

  SpendBudget(BudgetAction::kDeleteAll);
  EXPECT_EQ(Decide().action, NodeAction::kDelete);
  // A stopped node bills no VMs: left as it is.
  facts.cloud->state = NodeState::kStopped;
  EXPECT_EQ(Decide().action, NodeAction::kNone);
}

TEST_F(DecideTest, BudgetCancelsAWaitingQueuedResource) {
  Unlisted();
  record().state = NodeState::kQueued;
  facts.queued_resource = CloudSighting{"trainer", kZone, NodeState::kWaitingForResources, "lab"};
  SpendBudget(BudgetAction::kStopCreating);
  EXPECT_TRUE(Deletes(Decide(), "budget",
                      "queued resource WAITING_FOR_RESOURCES would create: usd_per_day $10.00 "
                      "reached"));
}

TEST_F(DecideTest, SpotFallsBackToOnDemandAfterLosses) {
  spec.spot_fallback = SpotFallback{3, hours(6)};
  facts.cloud->state = NodeState::kPreempted;
  facts.recent_losses = 1;  // this preemption is the second
  NodeDecision d = Decide();
  EXPECT_EQ(d.action, NodeAction::kRecover);
  EXPECT_EQ(d.capacity, Capacity::kSpot);

  facts.recent_losses = 2;  // the third
  d = Decide();
  EXPECT_EQ(d.capacity, Capacity::kOnDemand);
  EXPECT_EQ(d.reason,
            "preempted (api: PREEMPTED); on demand: 3 losses within 6h (spot_fallback after 3)");

  // A create after stockouts: they are recorded already, none is added.
  Unlisted();
  record().state = NodeState::kStockout;
  record().updated_at = kNow - minutes(2);
  facts.recent_losses = 2;
  EXPECT_EQ(Decide().capacity, Capacity::kSpot);
  facts.recent_losses = 3;
  EXPECT_EQ(Decide().capacity, Capacity::kOnDemand);

  // Without spot_fallback, spot however often it is lost.
  spec.spot_fallback.reset();
  facts.recent_losses = 50;
  EXPECT_EQ(Decide().capacity, Capacity::kSpot);
}

TEST_F(DecideTest, DeletedOnPurposeStaysDeleted) {
  Unlisted();
  for (const char* why : {"ttl", "idle", "down", "budget"}) {
    facts.retired = why;
    SpendBudget(BudgetAction::kDeleteAll);
    NodeDecision d = Decide();
    EXPECT_EQ(d.action, NodeAction::kNone) << why;
    EXPECT_EQ(d.reason, std::string("deleted (") + why + "); `tpufleet up` makes it again");
  }
  // Once the budget allows (a new UTC day), a budget-deleted node comes back.
  budget = BudgetState{};
  facts.retired = "budget";
  NodeDecision d = Decide();
  EXPECT_TRUE(Is(d, NodeAction::kCreate, "deleted at the budget, which allows it again"));
}

TEST_F(DecideTest, DeletedOnPurposeButStillListedIsDeletedAgain) {
  facts.retired = "idle";
  facts.cloud->state = NodeState::kPreempted;  // not recovered either
  NodeDecision d = Decide();
  EXPECT_TRUE(Deletes(d, "idle", "deleted (idle) but still listed: deleting again"));
  facts.cloud->state = NodeState::kDeleting;
  EXPECT_TRUE(Is(Decide(), NodeAction::kNone, "being deleted (idle)"));
  // `tpufleet down` is at it (it holds the state lock): left to it.
  facts.cloud->state = NodeState::kReady;
  facts.retired = "down";
  EXPECT_TRUE(Is(Decide(), NodeAction::kNone, "being deleted (down)"));
}

TEST_F(DecideTest, LostPastItsTtlIsNotRecovered) {
  spec.ttl = minutes(30);
  facts.cloud->state = NodeState::kPreempted;  // created an hour ago
  NodeDecision d = Decide();
  EXPECT_TRUE(Deletes(d, "ttl",
                      "preempted (api: PREEMPTED); deleting the husk, not recreating: ttl 30m "
                      "reached"));  // so it stays deleted
  EXPECT_EQ(d.signal, "api");
  Unlisted();
  d = Decide();
  EXPECT_EQ(d.action, NodeAction::kNone);
  EXPECT_EQ(d.signal, "vanished");
  // Within its ttl, recovered as any other.
  spec.ttl = hours(2);
  EXPECT_EQ(Decide().action, NodeAction::kRecover);
}

TEST(NodeActionTest, Names) {
  EXPECT_EQ(NodeActionName(NodeAction::kRecover), "recover");
  EXPECT_EQ(NodeActionName(NodeAction::kWarnTtl), "warn-ttl");
  EXPECT_EQ(NodeActionName(NodeAction::kHold), "hold");
}

}  // namespace
}  // namespace tpufleet
