// The Reconciler against control's fakes (reconcile/testing/reconciler_fixture.h). Each
// decision path of core/reconcile.h is carried out once, end to end, as `serve` would;
// the idle policy's are reconciler_idle_test.cc's.
#include "reconcile/reconciler.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "reconcile/testing/reconciler_fixture.h"

namespace tpufleet::testing {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

TEST_F(ReconcilerTest, ApiPreemptionDeletesTheHuskAndMakesTheNodeAgain) {
  FleetSpec spec = w.Spec(Trainer());
  w.Up(spec);
  std::string husk_key = w.Record("trainer").workers[0].host_key;
  auto r = Make(spec);
  r->Pass();
  Settle(*r);
  EXPECT_EQ(w.cloud.creates(), 1);  // up's, nothing more while all is well

  w.cloud.Preempt(kZoneB, "trainer");
  r->Pass();
  EXPECT_TRUE(lock.Held());  // taken for the recovery
  Settle(*r);
  EXPECT_FALSE(lock.Held());
  EXPECT_EQ(w.cloud.deletes(), 1);
  EXPECT_EQ(w.cloud.creates(), 2);
  std::optional<CloudNode> node = w.cloud.Node(kZoneB, "trainer");
  ASSERT_TRUE(node.has_value());
  EXPECT_EQ(node->state, NodeState::kReady);
  EXPECT_NE(w.Record("trainer").workers[0].host_key, husk_key);
  std::vector<std::string> kinds = Kinds("trainer");
  std::vector<std::string> want = {"preempted",        "detected", "delete-requested",
                                   "create-requested", "ready",    "accounts-applied",
                                   "agent-up",         "setup-done", "recovered"};
  auto at = std::search(kinds.begin(), kinds.end(), want.begin(), want.end());
  EXPECT_NE(at, kinds.end()) << Join(kinds, " ");
  EXPECT_EQ(w.Events("preempted", "trainer").back().detail, "signal=api workers=4");
  ServeSnapshot s = r->Snapshot();
  EXPECT_EQ(s.preemptions, 1);
  EXPECT_EQ(s.recoveries, 1);
  EXPECT_EQ(s.recover_seconds.size(), 1u);
  EXPECT_GT(s.api_calls, 0);
  EXPECT_GT(s.last_pass_cpu_seconds, 0);  // the recovery's end keeps the last pass's figure
  EXPECT_TRUE(Logged("trainer: preempted (api: PREEMPTED) → recovering")) << Join(log, "\n");
}

// Issue 16: a collaborator `tpufleet users add` stored gets an account on the recreated
// node's workers too (UsersOfNode, as up's), so they still log in after a preemption.
TEST_F(ReconcilerTest, TheRecreatedNodeGetsTheStoredCollaborators) {
  FleetSpec spec = w.Spec(Trainer());
  w.Up(spec);
  UserRecord milo;
  milo.fleet = "lab";
  milo.name = "milo";
  milo.keys = {kBobKey};
  milo.sudo = true;
  ASSERT_TRUE(w.store->PutUser(milo).ok());
  auto r = Make(spec);
  w.cloud.Preempt(kZoneB, "trainer");
  r->Pass();
  Settle(*r);
  ASSERT_EQ(w.cloud.creates(), 2);
  auto requests = w.workers.AccountRequests();
  ASSERT_GE(requests.size(), 4u);
  for (size_t i = requests.size() - 4; i < requests.size(); ++i) {
    ASSERT_EQ(requests[i].second.users.size(), 1u) << requests[i].first;
    EXPECT_EQ(requests[i].second.users[0].name, "milo");
    EXPECT_TRUE(requests[i].second.users[0].sudo);
    EXPECT_EQ(requests[i].second.users[0].keys, std::vector<std::string>{kBobKey});
  }
}

TEST_F(ReconcilerTest, EveryAgentsNoticeRecoversANodeTheApiStillCallsReady) {
  FleetSpec spec = w.Spec(Trainer());
  auto r = UpAndServe(spec);
  ASSERT_EQ(w.cloud.Node(kZoneB, "trainer")->state, NodeState::kReady);
  // Three of four: waiting for the rest (or the API) to confirm.
  for (int i = 0; i < 3; ++i) {
    notices["trainer/w" + std::to_string(i)].preempted = true;
  }
  Hear(*r);
  EXPECT_FALSE(r->busy());
  EXPECT_EQ(w.cloud.deletes(), 0);
  notices["trainer/w3"].preempted = true;
  Hear(*r);
  EXPECT_TRUE(r->busy()) << Join(log, "\n");
  for (auto& [name, n] : notices) {
    n.preempted = false;  // the new node's workers
  }
  Settle(*r);
  EXPECT_EQ(w.cloud.deletes(), 1);
  EXPECT_EQ(w.cloud.creates(), 2);
  EXPECT_EQ(w.Events("preempted", "trainer").back().detail, "signal=agents workers=4");
  EXPECT_EQ(w.Events("delete-requested", "trainer").back().detail, "reason=husk");
}

TEST_F(ReconcilerTest, MaintenanceIsRecordedOnceAndRecreatesNothing) {
  FleetSpec spec = w.Spec(Trainer());
  auto r = UpAndServe(spec);
  notices["trainer/w2"].maintenance_event = "TERMINATE_ON_HOST_MAINTENANCE";
  Hear(*r);
  r->Pass();
  EXPECT_EQ(w.Events("maintenance", "trainer").size(), 1u);
  EXPECT_EQ(w.Events("maintenance", "trainer").back().detail, "signal=agents");
  EXPECT_EQ(w.cloud.deletes(), 0);
  EXPECT_FALSE(r->busy());
}

TEST_F(ReconcilerTest, AVanishedNodeIsMadeAgainFromTheSpec) {
  FleetSpec spec = w.Spec(Trainer());
  w.Up(spec);
  w.cloud.Vanish(kZoneB, "trainer");
  auto r = Make(spec);
  r->Pass();
  Settle(*r);
  EXPECT_EQ(w.cloud.creates(), 2);
  EXPECT_EQ(w.cloud.Node(kZoneB, "trainer")->state, NodeState::kReady);
  EXPECT_EQ(w.Events("preempted", "trainer").back().detail, "signal=vanished workers=0");
  EXPECT_EQ(w.Events("detected", "trainer").back().detail, "reason=vanished");
  EXPECT_TRUE(w.Events("delete-requested", "trainer").empty());
}

TEST_F(ReconcilerTest, ACommandHoldingTheStateLockMakesServeWaitThenRecover) {
  FleetSpec spec = w.Spec(Trainer());
  w.Up(spec);
  w.cloud.Preempt(kZoneB, "trainer");
  lock.holder = "`tpufleet up` (pid 123)";
  auto r = Make(spec);
  r->Pass();
  EXPECT_FALSE(r->busy());
  EXPECT_EQ(w.cloud.deletes(), 0);
  ServeSnapshot s = r->Snapshot();
  ASSERT_FALSE(s.warnings.empty());
  EXPECT_TRUE(Contains(s.warnings[0], "`tpufleet up` (pid 123) is changing the fleet"))
      << s.warnings[0];
  lock.holder.reset();
  r->Pass();
  Settle(*r);
  EXPECT_EQ(w.cloud.creates(), 2);
  EXPECT_TRUE(r->Snapshot().warnings.empty());
}

TEST_F(ReconcilerTest, TtlWarnsTheLoggedInUsersThenDeletesAndDoesNotMakeItAgain) {
  FleetSpec spec = w.Spec(Trainer("    ttl: 10m\n"));
  auto r = UpAndServe(spec);
  EXPECT_TRUE(walls.empty());
  w.clock.Advance(minutes(6));
  r->Pass();
  EXPECT_EQ(walls.size(), 4u);
  EXPECT_EQ(w.Events("ttl-warned", "trainer").size(), 1u);
  r->Pass();
  EXPECT_EQ(walls.size(), 4u);  // warned once
  w.clock.Advance(minutes(4));
  r->Pass();
  Settle(*r);
  EXPECT_FALSE(w.cloud.Node(kZoneB, "trainer").has_value());
  EXPECT_EQ(w.Events("delete-requested", "trainer").back().detail, "reason=ttl");
  EXPECT_TRUE(w.Records("lab").empty());
  r->Pass();
  Settle(*r);
  EXPECT_EQ(w.cloud.creates(), 1);  // retired: `up` makes it again, not serve
}

// Issue 14: a credential revoked mid-run. While the API refuses the listings, the pass
// says so once (in the provider's words, which name the credentials) and leaves the
// nodes it could not list alone, even one whose ttl its record says is due; once a
// listing works again, it carries on.
TEST_F(ReconcilerTest, ARefusedCredentialDeletesNothingAndServeCarriesOnAfterIt) {
  FleetSpec spec = w.Spec(Trainer("    ttl: 10m\n"));
  w.Up(spec);
  auto r = Make(spec);
  w.clock.Advance(minutes(6));
  r->Pass();
  Settle(*r);
  ASSERT_EQ(w.Events("ttl-warned", "trainer").size(), 1u);
  w.clock.Advance(minutes(5));  // the ttl is due
  const std::string refusal =
      "the TPU API refused test credentials (HTTP 401 UNAUTHENTICATED: Request had invalid "
      "authentication credentials.): run `gcloud auth application-default login` again";
  w.cloud.FailEvery("ListNodes", PermissionDeniedError(refusal));
  for (int pass = 0; pass < 2; ++pass) {
    r->Pass();
    Settle(*r);
    EXPECT_TRUE(w.cloud.Node(kZoneB, "trainer").has_value());
    EXPECT_EQ(w.cloud.deletes(), 0);
    EXPECT_EQ(w.cloud.creates(), 1);  // up's
    std::vector<std::string> warnings = r->Snapshot().warnings;
    ASSERT_EQ(warnings.size(), 1u) << Join(warnings, "\n");
    EXPECT_EQ(warnings[0], "cannot list: " + refusal +
                               "; serve deletes and creates nothing it cannot list until then");
  }
  EXPECT_TRUE(w.Events("delete-requested", "trainer").empty());
  w.cloud.FailEvery("ListNodes", Status::Ok());  // the credentials work again
  r->Pass();
  Settle(*r);
  EXPECT_TRUE(r->Snapshot().warnings.empty()) << Join(r->Snapshot().warnings, "\n");
  EXPECT_FALSE(w.cloud.Node(kZoneB, "trainer").has_value());
  EXPECT_EQ(w.Events("delete-requested", "trainer").back().detail, "reason=ttl");
}

// Any other listing failure still names the zone, and only a refusal stops the actions.
TEST_F(ReconcilerTest, AListingThatFailsOtherwiseNamesItsZone) {
  FleetSpec spec = w.Spec(Trainer());
  w.Up(spec);
  auto r = Make(spec);
  w.cloud.FailEvery("ListNodes", UnavailableError("HTTP 503"));
  r->Pass();
  Settle(*r);
  std::vector<std::string> warnings = r->Snapshot().warnings;
  EXPECT_EQ(warnings, (std::vector<std::string>{"listing " + std::string(kZoneA) + ": HTTP 503",
                                                "listing " + std::string(kZoneB) + ": HTTP 503"}));
}

TEST_F(ReconcilerTest, Issue17TheLedgerBillsTheFleetsOwnerAndTheStoreKnowsTheFleet) {
  // Without an owner, whoever applies the spec: the login serve runs as ("tester").
  FleetSpec spec = w.Spec(std::string("budget: {usd_per_day: 50}\n") + Trainer());
  auto r = UpAndServe(spec);
  Result<std::vector<SpendRecord>> spend = w.store->Spend("lab", std::nullopt);
  ASSERT_TRUE(spend.ok() && spend->size() == 1u);
  EXPECT_EQ((*spend)[0].owner, "tester");
  Result<std::vector<FleetRecord>> fleets = w.store->Fleets();
  ASSERT_TRUE(fleets.ok() && fleets->size() == 1u);
  EXPECT_EQ((*fleets)[0].owner, "tester");
  EXPECT_EQ((*fleets)[0].usd_per_day, 50);

  // The spec names an owner: the stretch opened after the preemption is billed to them.
  FleetSpec owned = w.Spec(std::string("owner: ada\n") + Trainer());
  r->SetFleets({owned});
  w.cloud.Preempt(kZoneB, "trainer");
  r->Pass();
  Settle(*r);
  spend = w.store->Spend("lab", std::nullopt);
  ASSERT_TRUE(spend.ok());
  ASSERT_GE(spend->size(), 2u);
  EXPECT_EQ(spend->front().owner, "tester");
  auto husk = std::find_if(spend->begin(), spend->end(),
                           [](const SpendRecord& x) { return x.state == "PREEMPTED"; });
  ASSERT_NE(husk, spend->end());
  EXPECT_EQ(husk->owner, "ada");
  fleets = w.store->Fleets();
  EXPECT_EQ((*fleets)[0].owner, "ada");
  EXPECT_FALSE((*fleets)[0].usd_per_day.has_value());
}

// A node that appears between two lists has billed since its create (the API's
// createTime), not since the list that first showed it; never before the list that did
// not show it, nor before its last stretch ended.
TEST_F(ReconcilerTest, Issue17ANodeFirstSeenIsBilledFromItsCreateSinceTheListBefore) {
  FleetSpec spec = w.Spec(Trainer());
  w.Up(spec);
  auto r = Make(spec);
  Clock::WallTime t0 = w.clock.Now();
  w.cloud.SetCreateTime(kZoneB, "trainer", t0 - std::chrono::hours(5));
  r->Pass();  // serve's first list: it bills from now, not from a create hours ago
  Settle(*r);
  std::vector<SpendRecord> spend = w.store->Spend("lab", std::nullopt).value();
  ASSERT_EQ(spend.size(), 1u);
  EXPECT_EQ(spend[0].start, t0);

  w.cloud.Vanish(kZoneB, "trainer");
  w.clock.Advance(std::chrono::seconds(10));
  r->Pass();  // gone: its stretch ends; the recovery makes it again
  Settle(*r);
  ASSERT_TRUE(w.cloud.Node(kZoneB, "trainer").has_value());
  // The next list shows it, made 2 s after the list that found it gone; it bills from
  // that create, not from the list 20 s later.
  w.cloud.SetCreateTime(kZoneB, "trainer", t0 + std::chrono::seconds(12));
  w.clock.Advance(std::chrono::seconds(20));
  r->Pass();
  Settle(*r);
  spend = w.store->Spend("lab", std::nullopt).value();
  ASSERT_EQ(spend.size(), 2u);
  EXPECT_EQ(spend[0].end, t0 + std::chrono::seconds(10));
  EXPECT_EQ(spend[1].start, t0 + std::chrono::seconds(12));
  EXPECT_FALSE(spend[1].end.has_value());
}

// A husk deleted and made again between two lists: its PREEMPTED stretch ends, and the
// new node's READY one starts, at the new node's create, not at the list that saw it.
TEST_F(ReconcilerTest, Issue17ANodeMadeAgainUnseenEndsTheOldStretchAtItsCreate) {
  FleetSpec spec = w.Spec(Trainer());
  auto r = UpAndServe(spec);
  Clock::WallTime t0 = w.clock.Now();
  w.cloud.Preempt(kZoneB, "trainer");
  r->Pass();  // PREEMPTED: recovered (deleted and made again), unseen till the next list
  Settle(*r);
  ASSERT_EQ(w.cloud.creates(), 2);
  w.clock.Advance(std::chrono::seconds(10));
  // The API's createTime has nanoseconds; the store keeps microseconds.
  w.cloud.SetCreateTime(kZoneB, "trainer",
                        t0 + std::chrono::seconds(3) + std::chrono::nanoseconds(700));
  r->Pass();
  Settle(*r);
  std::vector<SpendRecord> spend = w.store->Spend("lab", std::nullopt).value();
  ASSERT_EQ(spend.size(), 3u);
  EXPECT_EQ(spend[1].state, "PREEMPTED");
  EXPECT_EQ(spend[1].start, t0);
  EXPECT_EQ(spend[1].end, t0 + std::chrono::seconds(3));
  EXPECT_EQ(spend[2].state, "READY");
  EXPECT_EQ(spend[2].start, t0 + std::chrono::seconds(3));
  // The same node's next state begins when a list shows it, not at its create again.
  w.cloud.SetState(kZoneB, "trainer", NodeState::kRepairing);
  w.clock.Advance(std::chrono::seconds(5));
  r->Pass();
  spend = w.store->Spend("lab", std::nullopt).value();
  ASSERT_EQ(spend.size(), 4u);
  EXPECT_EQ(spend[2].end, w.clock.Now());
  EXPECT_EQ(spend[3].state, "REPAIRING");
  EXPECT_EQ(spend[3].start, w.clock.Now());
}

TEST_F(ReconcilerTest, AtTheBudgetAHuskIsDeletedAndNotMadeAgain) {
  FleetSpec spec = w.Spec(std::string("budget: {usd_per_day: 5}\n") + Trainer());
  auto r = UpAndServe(spec);
  ASSERT_EQ(w.store->Spend("lab", std::nullopt)->size(), 1u);  // READY, open
  w.clock.Advance(std::chrono::hours(2));
  w.cloud.Preempt(kZoneB, "trainer");
  r->Pass();
  Settle(*r);
  EXPECT_EQ(w.cloud.deletes(), 1);
  EXPECT_EQ(w.cloud.creates(), 1);
  EXPECT_FALSE(w.cloud.Node(kZoneB, "trainer").has_value());
  ServeSnapshot s = r->Snapshot();
  ASSERT_FALSE(s.warnings.empty());
  EXPECT_TRUE(Contains(s.warnings[0], "budget reached")) << s.warnings[0];
  EXPECT_GT(s.spend_usd["lab"], 5);
  r->Pass();
  Settle(*r);
  EXPECT_EQ(w.cloud.creates(), 1);  // held
  // Said once while it holds: one event with the amounts, the same warning each pass.
  EXPECT_EQ(w.Events("budget-reached", "").size(), 1u);
  EXPECT_TRUE(Contains(w.Events("budget-reached", "").back().detail, "usd_per_day $5.00 reached"));
  std::vector<std::string> held = r->Snapshot().warnings;
  w.clock.Advance(std::chrono::minutes(10));
  r->Pass();
  Settle(*r);
  EXPECT_EQ(r->Snapshot().warnings, held);
  EXPECT_EQ(w.Events("budget-reached", "").size(), 1u);
}

TEST_F(ReconcilerTest, APassWritesTheHeartbeatAndTheSnapshot) {
  FleetSpec spec = w.Spec(Trainer());
  w.Up(spec);
  ReconcilerOptions o;
  o.serve.pid = 4242;
  o.serve.host = "box";
  auto r = Make(spec, o);
  r->Pass();
  std::optional<ServeRecord> beat = w.store->Serve().value();
  ASSERT_TRUE(beat.has_value());
  EXPECT_EQ(beat->pid, 4242);
  EXPECT_EQ(beat->fleets, std::vector<std::string>{"lab"});
  EXPECT_EQ(beat->last_pass_at, w.clock.Now());
  ServeSnapshot s = r->Snapshot();
  EXPECT_EQ(s.passes, 1);
  EXPECT_EQ(s.nodes_by_state["lab"]["READY"], 1);
}

TEST_F(ReconcilerTest, ListingsArePacedAndEveryZoneIsListedInTurn) {
  // Two zones, a cap of 6 calls a minute: the bucket holds one call (10 s of them), so a
  // pass lists one zone, and the one that waited longest goes next.
  FleetSpec spec = w.Spec(Trainer());
  w.Up(spec);
  w.cloud.ClearCalls();
  ReconcilerOptions o;
  o.api_calls_per_minute = 6;
  auto r = Make(spec, o);
  r->Pass();
  EXPECT_EQ(w.cloud.CallCount("ListNodes"), 1);
  r->Pass();
  EXPECT_EQ(w.cloud.CallCount("ListNodes"), 1);  // the bucket is empty: no call
  EXPECT_FALSE(r->busy());
  w.clock.Advance(seconds(10));
  r->Pass();
  EXPECT_EQ(w.cloud.CallCount("ListNodes"), 2);
  std::vector<FakeCloudCall> calls = w.cloud.Calls();
  std::vector<std::string> listed;
  for (const FakeCloudCall& c : calls) {
    if (c.method == "ListNodes") {
      listed.push_back(c.id);
    }
  }
  EXPECT_NE(listed[0], listed[1]);
}

TEST_F(ReconcilerTest, AServeKilledMidRecoveryConvergesWhenStartedAgain) {
  FleetSpec spec = w.Spec(Trainer());
  w.Up(spec);
  w.cloud.Preempt(kZoneB, "trainer");
  {
    auto r = Make(spec);
    r->Pass();
    // The husk deleted, the create sent, and serve killed before it hears back.
    ASSERT_TRUE(loop.RunUntil([&] { return w.cloud.creates() >= 2; }).ok());
    EXPECT_EQ(w.cloud.deletes(), 1);
    EXPECT_EQ(w.cloud.creates(), 2);
    EXPECT_EQ(w.Record("trainer").state, NodeState::kRequested);
  }  // killed: nothing of it runs on
  EXPECT_FALSE(lock.Held());
  auto again = Make(spec);
  for (int pass = 0; pass < 5; ++pass) {
    again->Pass();
    Settle(*again);
    w.clock.Advance(seconds(5));
  }
  int nodes = 0;
  for (const CloudNode& n : w.cloud.AllNodes()) {
    nodes += n.id == "trainer" ? 1 : 0;
  }
  EXPECT_EQ(nodes, 1);
  EXPECT_EQ(w.cloud.Node(kZoneB, "trainer")->state, NodeState::kReady);
  EXPECT_EQ(w.Record("trainer").state, NodeState::kReady);
  EXPECT_EQ(w.Record("trainer").workers.size(), 4u);
  EXPECT_EQ(w.cloud.creates(), 2);  // the killed serve's create, finished: none more
}

// A job run without --restart: serve's jobs round asks its node while the job's run is
// open, and ends the run once the agents say the job ended. A node with neither an open
// run nor a restartable job is not asked.
TEST_F(ReconcilerTest, Issue17TheJobsRoundEndsTheRunOfAJobThatEnded) {
  FleetSpec spec = w.Spec(Trainer());
  w.Up(spec);
  auto r = Make(spec);
  r->Pass();
  Hear(*r);
  EXPECT_TRUE(agents->CallsOf(api::AgentOp::kJobList).empty());

  PutOnWorkers("jabcdefg", JobState::kRunning);
  ASSERT_TRUE(w.store
                  ->PutJobRun({"lab", "trainer", "jabcdefg", "train", "", "", w.clock.Now(),
                               std::nullopt})
                  .ok());
  w.clock.Advance(kJobCheckEvery);
  r->Pass();
  Hear(*r);
  EXPECT_EQ(agents->CallsOf(api::AgentOp::kJobList).size(), 4u);
  EXPECT_FALSE(w.store->JobRuns("lab", std::nullopt).value().at(0).end.has_value());

  for (int i = 0; i < 4; ++i) {
    agents->End("trainer/w" + std::to_string(i), "jabcdefg", 0);  // no end time: now
  }
  w.clock.Advance(kJobCheckEvery);
  r->Pass();
  Hear(*r);
  std::vector<JobRunRecord> runs = w.store->JobRuns("lab", std::nullopt).value();
  ASSERT_EQ(runs.size(), 1u);
  ASSERT_TRUE(runs[0].end.has_value());
  EXPECT_LE(*runs[0].end, w.clock.Now());
  EXPECT_GT(*runs[0].end, runs[0].start);
  EXPECT_TRUE(Starts().empty());  // not restartable: never started again
}

TEST_F(ReconcilerTest, ARecoveredNodesRestartableJobsResumeWithTheirRestartCount) {
  FleetSpec spec = w.Spec(Trainer());
  w.Up(spec);
  PutJob(JobState::kLost);  // the job as it ran on the husk, ended with it
  w.cloud.Preempt(kZoneB, "trainer");
  auto r = Make(spec);
  r->Pass();
  Settle(*r);
  EXPECT_EQ(Starts(), std::vector<int>(4, 1));
  EXPECT_EQ(w.store->Jobs("lab").value().at(0).restarts, 1);
  std::vector<std::string> kinds = Kinds("trainer");
  std::vector<std::string> want = {"setup-done", "job-resumed", "recovered"};
  EXPECT_NE(std::search(kinds.begin(), kinds.end(), want.begin(), want.end()), kinds.end())
      << Join(kinds, " ");
}

// Found by the chaos soak (test/serve_soak.sh): serve's fixes, with the fixture above.
class Issue14 : public ReconcilerTest {};

TEST_F(Issue14, AJobKilledByMaintenanceIsRestartedOnceTheMaintenanceIsOver) {
  FleetSpec spec = w.Spec(Trainer());
  w.Up(spec);
  PutJob(JobState::kRunning);
  auto r = Make(spec);
  r->Pass();
  Hear(*r);  // the agents answer: the jobs round finds the job running
  EXPECT_TRUE(Starts().empty());
  EXPECT_EQ(agents->CallsOf(api::AgentOp::kJobList).size(), 4u);
  for (int i = 0; i < 4; ++i) {
    notices["trainer/w" + std::to_string(i)].maintenance_event = "TERMINATE_ON_HOST_MAINTENANCE";
  }
  Hear(*r);
  EXPECT_EQ(w.Events("maintenance", "trainer").size(), 1u);
  w.clock.Advance(seconds(1));
  PutOnWorkers("jabcdefg", JobState::kCancelled);  // the reboot's SIGTERM
  for (auto& [name, n] : notices) {
    n.maintenance_event = "NONE";
  }
  Hear(*r);  // over: the round is due at once, not kJobCheckEvery later
  EXPECT_EQ(Starts(), std::vector<int>(4, 1));
  JobRecord job = w.store->Jobs("lab").value().at(0);
  EXPECT_EQ(job.state, "active");
  EXPECT_EQ(job.restarts, 1);
  EXPECT_EQ(job.last_reason, "maintenance (cancelled while its record was active)");
  EXPECT_EQ(w.cloud.deletes(), 0);
  EXPECT_EQ(w.cloud.creates(), 1);
  // Running again: later rounds leave it; once it succeeded, its record is done.
  PutOnWorkers("jabcdefg", JobState::kSucceeded);
  w.clock.Advance(kJobCheckEvery);
  r->Pass();
  EXPECT_EQ(Starts().size(), 4u);
  EXPECT_EQ(w.store->Jobs("lab").value().at(0).state, "done");
  EXPECT_EQ(w.Events("job-done", "trainer").size(), 1u);
}

TEST_F(Issue14, ANodeWhoseSetupWasCutShortIsSetUpByTheNextPass) {
  FleetSpec spec = w.Spec(Trainer());
  w.Up(spec);
  // As a recovery leaves it when a storm or a cut-off worker fails its setup (or serve
  // is killed then): READY, its workers recorded, worker 2 not set up.
  NodeRecord rec = w.Record("trainer");
  rec.workers[2].setup_done = false;
  ASSERT_TRUE(w.store->PutNode(rec).ok());
  auto r = Make(spec);
  r->Pass();
  EXPECT_TRUE(r->busy());
  Settle(*r);
  EXPECT_TRUE(w.Record("trainer").workers[2].setup_done);
  EXPECT_EQ(w.cloud.creates(), 1);  // finished, not made again
  EXPECT_EQ(w.cloud.deletes(), 0);
  EXPECT_TRUE(Logged("trainer: listed READY but never set up")) << Join(log, "\n");
}

TEST_F(Issue14, AfterAMaintenanceTheRecordFollowsTheWorkersToTheirNewAddresses) {
  FleetSpec spec = w.Spec(Trainer());
  w.Up(spec);
  std::string before = w.Record("trainer").workers[1].address;
  std::string key = w.Record("trainer").workers[1].host_key;
  w.cloud.MoveWorkers(kZoneB, "trainer");
  auto r = Make(spec);
  r->Pass();
  EXPECT_FALSE(r->busy());  // nothing made again: the same VMs, moved
  NodeRecord rec = w.Record("trainer");
  // A copy: Node returns the node by value.
  const CloudWorker now = w.cloud.Node(kZoneB, "trainer")->workers[1];
  EXPECT_NE(rec.workers[1].address, before);
  EXPECT_EQ(rec.workers[1].address, now.SshAddress());
  EXPECT_EQ(rec.workers[1].internal_address, now.address);
  EXPECT_EQ(rec.workers[1].host_key, key);
  EXPECT_TRUE(rec.workers[1].setup_done);
}

}  // namespace
}  // namespace tpufleet::testing
