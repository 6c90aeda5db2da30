// The idle policy end to end against control's fakes (reconcile/testing/
// reconciler_fixture.h): delete, and stop for a single-host node.
#include <gtest/gtest.h>

#include "reconcile/reconciler.h"
#include "reconcile/testing/reconciler_fixture.h"

namespace tpufleet::testing {
namespace {

using std::chrono::minutes;

TEST_F(ReconcilerTest, AnIdleNodeIsDeletedButAnInputBoundOneIsNot) {
  FleetSpec spec = w.Spec(Trainer("    idle: {after: 2m}\n") + SmallNode("eval"));
  spec.nodes[1].idle = IdlePolicy{minutes(2), IdleAction::kDelete};
  w.Up(spec);
  for (int i = 0; i < 4; ++i) {
    metrics["trainer/w" + std::to_string(i)] = WorkerReport(NowMs(), 0, "");  // unused 1 h
  }
  metrics["eval/w0"] = WorkerReport(NowMs(), 9, "j1", /*input_bound=*/true);
  auto r = Make(spec);
  r->Pass();  // the streams open: the next pass knows the watched workers
  Settle(*r);
  w.clock.Advance(kDefaultMetricsEvery);
  r->Pass();
  Settle(*r);
  EXPECT_FALSE(w.cloud.Node(kZoneB, "trainer").has_value());
  EXPECT_EQ(w.Events("delete-requested", "trainer").back().detail, "reason=idle");
  EXPECT_TRUE(w.cloud.Node(kZoneB, "eval").has_value());
  EXPECT_TRUE(w.Events("delete-requested", "eval").empty());
}

// Issue 14: `idle: {action: stop}` on a single-host node: nodes.stop, then the record
// says STOPPED (what `status` shows) and the ledger's stretch is no longer billed; a
// stopped node is then left alone, pass after pass.
TEST_F(ReconcilerTest, AnIdleSingleHostNodeIsStoppedThenLeftAlone) {
  FleetSpec spec = w.Spec(std::string("fleet: lab\nproject: ") + kProject + "\nnodes:\n" +
                          SmallNode("eval", "    idle: {after: 2m, action: stop}\n"));
  w.Up(spec);
  w.cloud.SetOperationPolls(2);  // the stop's operation is polled before it is done
  metrics["eval/w0"] = WorkerReport(NowMs(), 0, "");  // unused for an hour
  auto r = Make(spec);
  r->Pass();  // the streams open: the next pass knows the watched workers
  Settle(*r);
  w.clock.Advance(kDefaultMetricsEvery);
  r->Pass();
  EXPECT_EQ(r->Snapshot().nodes_by_state.at("lab").at("STOPPING"), 1);
  Settle(*r);
  EXPECT_EQ(w.cloud.Node(kZoneB, "eval")->state, NodeState::kStopped);
  EXPECT_EQ(w.Record("eval").state, NodeState::kStopped);
  EXPECT_EQ(w.Events("stop-requested", "eval").back().detail, "reason=idle");
  EXPECT_EQ(w.Events("stopped", "eval").back().detail, "reason=idle");
  EXPECT_TRUE(Logged("eval: stopped (idle)"));
  for (int i = 0; i < 3; ++i) {
    w.clock.Advance(kDefaultMetricsEvery);
    r->Pass();
    Settle(*r);
  }
  EXPECT_EQ(w.cloud.stops(), 1);
  EXPECT_EQ(w.cloud.deletes(), 0);
  EXPECT_EQ(w.cloud.creates(), 1);  // up's
  EXPECT_TRUE(w.Events("preempted", "eval").empty());
  EXPECT_EQ(r->Snapshot().nodes_by_state.at("lab").at("STOPPED"), 1);
  std::vector<SpendRecord> spend = w.store->Spend("lab", std::nullopt).value();
  ASSERT_EQ(spend.size(), 2u);
  EXPECT_EQ(spend[0].state, "READY");
  EXPECT_TRUE(spend[0].end.has_value());
  EXPECT_EQ(spend[1].state, "STOPPED");
  EXPECT_FALSE(spend[1].end.has_value());
}

// A stop the API refuses is logged and tried again only after kActionRetry, as a failed
// delete is; the record keeps what the API last said.
TEST_F(ReconcilerTest, AStopTheApiRefusesIsLoggedAndTheRecordStaysReady) {
  FleetSpec spec = w.Spec(std::string("fleet: lab\nproject: ") + kProject + "\nnodes:\n" +
                          SmallNode("eval", "    idle: {after: 2m, action: stop}\n"));
  w.Up(spec);
  w.cloud.FailNext("StopNode", InvalidArgumentError("stop is not supported while in state "
                                                    "REPAIRING"));
  metrics["eval/w0"] = WorkerReport(NowMs(), 0, "");
  auto r = Make(spec);
  r->Pass();
  Settle(*r);
  w.clock.Advance(kDefaultMetricsEvery);
  r->Pass();
  Settle(*r);
  EXPECT_TRUE(Logged("eval: stop failed: stop is not supported while in state REPAIRING"));
  EXPECT_EQ(w.Record("eval").state, NodeState::kReady);
  EXPECT_TRUE(w.Events("stopped", "eval").empty());
  r->Pass();
  EXPECT_EQ(w.cloud.stops(), 1);  // not before kActionRetry
}

// Issue 17: every node's usage, idle policy or not, is added to the store each metrics
// round, from where the last round left off; a restarted serve goes on from the store.
TEST_F(ReconcilerTest, Issue17EveryMetricsRoundAddsEachNodesUsageOnce) {
  FleetSpec spec = w.Spec(Trainer() + SmallNode("eval"));
  for (int i = 0; i < 4; ++i) {
    metrics["trainer/w" + std::to_string(i)] = WorkerReport(NowMs(), 60, "j1");
  }
  metrics["eval/w0"] = WorkerReport(NowMs(), 0, "");  // unused for an hour
  w.Up(spec);
  auto rounds = [&](Reconciler& r, int n) {
    r.Pass();  // the streams open and are heard: the next passes know who answers
    Hear(r);
    for (int i = 0; i < n; ++i) {
      w.clock.Advance(kDefaultMetricsEvery);
      r.Pass();
      Settle(r);
    }
  };
  auto seconds_of = [&](const std::string& node) {
    UsageRecord sum;
    std::vector<UsageRecord> rows = w.store->Usage("lab", std::nullopt).value();
    for (const UsageRecord& u : rows) {
      if (u.node == node) {
        EXPECT_EQ(u.job, node == "trainer" ? "j1" : "") << node;
        sum.seconds += u.seconds;
        sum.busy_seconds += u.busy_seconds;
        sum.idle_seconds += u.idle_seconds;
      }
    }
    return sum;
  };
  {
    auto r = Make(spec);
    rounds(*r, 2);  // the first round looks back a window (60 s), the next 30 s
  }
  UsageRecord trainer = seconds_of("trainer");
  EXPECT_DOUBLE_EQ(trainer.seconds, 90);
  EXPECT_DOUBLE_EQ(trainer.busy_seconds, 54);
  EXPECT_DOUBLE_EQ(trainer.idle_seconds, 0);
  EXPECT_DOUBLE_EQ(seconds_of("eval").idle_seconds, 90);

  // serve restarted at once: its first round measures from where the last one ended.
  auto again = Make(spec);
  rounds(*again, 1);
  double since_restart = std::chrono::duration<double>(kNoticeRetry + kDefaultMetricsEvery).count();
  EXPECT_DOUBLE_EQ(seconds_of("trainer").seconds, 90 + since_restart);
  EXPECT_DOUBLE_EQ(seconds_of("eval").seconds, 90 + since_restart);

  // A worker whose agent does not answer keeps its node out of the rounds (each would
  // wait out the call's timeout); its usage is not measured meanwhile.
  cut_off.insert("trainer/w2");
  again->Pass();
  Hear(*again);
  w.clock.Advance(kDefaultMetricsEvery);
  again->Pass();
  Settle(*again);
  EXPECT_DOUBLE_EQ(seconds_of("trainer").seconds, 90 + since_restart);
  EXPECT_GT(seconds_of("eval").seconds, 90 + since_restart);  // the round did run
}

}  // namespace
}  // namespace tpufleet::testing
