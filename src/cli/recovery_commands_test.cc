// What the CLI shows of serve's work (issue 14), through Main over a TestWorld whose
// workers answer as node agents (FakeAgents): `run --restart` (its flags and what it
// keeps), `events` (filters, the recovery's steps, --json), `status` (the serve line, how
// old the states are, a preempted node never READY, the time-to-recover) and `jobs`
// (RESTARTS and TTR). The store's side: store/store_test.cc; RestartJob:
// control/jobs_restart_test.cc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/testing/lent_world.h"
#include "cli/testing/run_cli.h"
#include "control/jobs.h"
#include "control/testing/job_lab.h"
#include "util/strings.h"

namespace tpufleet::cli {
namespace {

using cli_testing::Contains;
using cli_testing::Output;
using cli_testing::Tpufleet;
using std::chrono::minutes;
using std::chrono::seconds;

std::string ThisHost() {
  char host[256] = {};
  return ::gethostname(host, sizeof host - 1) == 0 ? host : "";
}

class RecoveryCommandsTest : public tpufleet::testing::JobLab {
 protected:
  void SetUp() override {
    JobLab::SetUp();
    // The lab's records as `up` leaves them: updated now.
    std::vector<NodeRecord> nodes = *t_.store->Nodes("lab");
    for (NodeRecord n : nodes) {
      n.created_at = n.updated_at = t_.clock.Now();
      ASSERT_TRUE(t_.store->PutNode(n).ok());
    }
    app_.start_detached = [](const std::vector<std::string>&, const std::string&) {
      return Status::Ok();
    };
  }

  void Event(const std::string& node, const std::string& kind, const std::string& detail,
             Clock::WallTime at) {
    ASSERT_TRUE(t_.store->AddEvent({0, at, "lab", node, kind, detail}).ok());
  }

  // pod's recovery from a preemption at `t0`: the steps serve records, 53 s in all.
  void Recovery(Clock::WallTime t0) {
    Event("pod", "preempted", "signal=agents workers=4", t0);
    Event("pod", "detected", "reason=preempted", t0 + std::chrono::milliseconds(400));
    Event("pod", "delete-requested", "reason=husk", t0 + std::chrono::milliseconds(500));
    Event("pod", "create-requested", "zone=us-central2-b", t0 + seconds(3));
    Event("pod", "ready", "", t0 + seconds(41));
    Event("pod", "job-resumed", "job=jabcdefg restarts=1", t0 + seconds(53));
    Event("pod", "recovered", "seconds=53.0", t0 + seconds(53));
  }

  std::vector<std::string> Lines(const std::string& text) { return Split(text, '\n'); }

  // The cells of a table's line.
  std::vector<std::string> Cells(const std::string& line) {
    std::vector<std::string> cells;
    for (const std::string& c : Split(line, ' ')) {
      if (!c.empty()) {
        cells.push_back(c);
      }
    }
    return cells;
  }

  // The line of `text` that has `part`; "" when none.
  std::string LineWith(const std::string& text, const std::string& part) {
    for (const std::string& l : Lines(text)) {
      if (Contains(l, part)) {
        return l;
      }
    }
    return "";
  }

  int opened_ = 0;
  App app_ = cli_testing::AppLending(t_.world, &opened_);
};

// ---------------------------------------------------------------------------------------
// run --restart

TEST_F(RecoveryCommandsTest, RunRestartFlagsAreCheckedBeforeAnyWorkerIsAsked) {
  Output bad = Tpufleet(app_, {"run", "pod", "--restart", "always", "--", "true"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(Contains(bad.err,
                       "--restart: \"always\" is not a policy; one of on-preemption, "
                       "on-failure, never"))
      << bad.err;
  Output alone = Tpufleet(app_, {"run", "pod", "--max-restarts", "3", "--", "true"});
  EXPECT_EQ(alone.code, 2);
  EXPECT_TRUE(Contains(alone.err, "--max-restarts goes with --restart")) << alone.err;
  Output negative = Tpufleet(
      app_, {"run", "pod", "--restart", "on-failure", "--max-restarts", "-1", "--", "true"});
  EXPECT_EQ(negative.code, 2);
  Output fraction = Tpufleet(
      app_, {"run", "pod", "--restart", "on-failure", "--max-restarts", "1.5", "--", "true"});
  EXPECT_EQ(fraction.code, 2);
  EXPECT_TRUE(Contains(fraction.err, "whole number")) << fraction.err;
  for (const auto& c : agents_.CallsOf(api::AgentOp::kJobStart)) {
    EXPECT_TRUE(c.request.dry_run) << "started on " << c.worker;
  }
  EXPECT_TRUE(t_.store->Jobs("")->empty());
}

TEST_F(RecoveryCommandsTest, RunRestartKeepsTheJobAndSaysWhatServeWillDo) {
  Output o = Tpufleet(app_, {"run", "pod", "--detach", "--restart", "on-preemption",
                             "--max-restarts", "4", "--", "python3", "train.py"});
  ASSERT_EQ(o.code, 0) << o.err;
  std::string id = Lines(o.out)[0];
  EXPECT_TRUE(Contains(o.err,
                       "`tpufleet serve` starts it again after a preemption (at most 4 "
                       "times)"))
      << o.err;
  std::vector<JobRecord> kept = *t_.store->Jobs("lab");
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].id, id);
  EXPECT_EQ(kept[0].restart, "on-preemption");
  EXPECT_EQ(kept[0].max_restarts, 4);

  // A job without --restart is not kept, and `run` says nothing of serve.
  Output plain = Tpufleet(app_, {"run", "solo", "--detach", "--", "true"});
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_FALSE(Contains(plain.err, "serve")) << plain.err;
  EXPECT_EQ(t_.store->Jobs("")->size(), 1u);
}

// ---------------------------------------------------------------------------------------
// jobs

TEST_F(RecoveryCommandsTest, JobsShowRestartsAndTheLastTimeToRecover) {
  Output run = Tpufleet(app_, {"run", "pod", "--detach", "--restart", "on-failure", "--", "x"});
  ASSERT_EQ(run.code, 0) << run.err;
  std::string id = Lines(run.out)[0];
  JobRecord job = (*t_.store->Jobs(""))[0];
  t_.clock.Advance(minutes(1));
  Recovery(t_.clock.Now());
  ASSERT_TRUE(RestartJob(t_.world, t_.catalog, job, "preempted").ok());

  Output o = Tpufleet(app_, {"jobs"});
  ASSERT_EQ(o.code, 0) << o.err;
  std::vector<std::string> lines = Lines(o.out);
  EXPECT_TRUE(Contains(lines[0], "RESTARTS  TTR")) << o.out;
  // The last cells (NOTE is empty here): RESTARTS (so far/limit), then TTR.
  std::vector<std::string> row = Cells(LineWith(o.out, id));
  ASSERT_GE(row.size(), 2u) << o.out;
  EXPECT_EQ(row[row.size() - 2], "1/10") << o.out;
  EXPECT_EQ(row.back(), "53.0s") << o.out;

  nlohmann::json j = nlohmann::json::parse(Tpufleet(app_, {"jobs", "--json"}).out);
  const nlohmann::json& jr = j["jobs"][0];
  EXPECT_EQ(jr["restart"], "on-failure");
  EXPECT_EQ(jr["restarts"], 1);
  EXPECT_EQ(jr["max_restarts"], 10);
  EXPECT_EQ(jr["time_to_recover_seconds"], 53.0);
}

TEST_F(RecoveryCommandsTest, JobsWithoutRestartsHaveNoRestartColumns) {
  ASSERT_EQ(Tpufleet(app_, {"run", "pod", "--detach", "--", "x"}).code, 0);
  Output o = Tpufleet(app_, {"jobs"});
  EXPECT_FALSE(Contains(o.out, "RESTARTS")) << o.out;
  nlohmann::json j = nlohmann::json::parse(Tpufleet(app_, {"jobs", "--json"}).out);
  EXPECT_FALSE(j["jobs"][0].contains("restarts")) << j.dump();
}

// ---------------------------------------------------------------------------------------
// events

TEST_F(RecoveryCommandsTest, EventsShowEachStepOfARecoveryAfterThePreemption) {
  Clock::WallTime t0 = t_.clock.Now();
  Event("solo", "create-requested", "zone=us-central2-a", t0 - minutes(10));
  Recovery(t0);
  Output o = Tpufleet(app_, {"events"});
  ASSERT_EQ(o.code, 0) << o.err;
  std::vector<std::string> lines = Lines(o.out);
  ASSERT_EQ(lines.size(), 10u) << o.out;  // header, 8 events, ""
  EXPECT_TRUE(StartsWith(lines[0], "TIME")) << o.out;
  EXPECT_TRUE(Contains(lines[0], "STEP")) << o.out;
  EXPECT_TRUE(Contains(lines[1], "solo")) << o.out;  // oldest first; before any loss: no step
  EXPECT_TRUE(Contains(LineWith(o.out, "preempted"), "+0.0s")) << o.out;
  EXPECT_TRUE(Contains(LineWith(o.out, "create-requested  zone=us-central2-b"), "+3.0s")) << o.out;
  std::string recovered = LineWith(o.out, "recovered");
  EXPECT_TRUE(Contains(recovered, "+53.0s")) << o.out;
  EXPECT_TRUE(Contains(recovered, "seconds=53.0")) << o.out;
}

TEST_F(RecoveryCommandsTest, EventsFilterByNodeKindAndSince) {
  Clock::WallTime t0 = t_.clock.Now();
  Event("solo", "ready", "", t0 - minutes(90));
  Recovery(t0 - minutes(10));
  t_.clock.Advance(seconds(1));

  Output pod = Tpufleet(app_, {"events", "pod", "--kind", "recovered"});
  ASSERT_EQ(pod.code, 0) << pod.err;
  EXPECT_EQ(Lines(pod.out).size(), 3u) << pod.out;
  EXPECT_TRUE(Contains(pod.out, "seconds=53.0")) << pod.out;

  Output recent = Tpufleet(app_, {"events", "--since", "1h"});
  EXPECT_FALSE(Contains(recent.out, "solo")) << recent.out;
  EXPECT_TRUE(Contains(recent.out, "pod")) << recent.out;

  Output none = Tpufleet(app_, {"events", "--since", "1s"});
  EXPECT_EQ(none.out, "No events.\n");

  nlohmann::json j = nlohmann::json::parse(
      Tpufleet(app_, {"events", "solo", "--json", "--since", "2025-12-31T00:00:00Z"}).out);
  ASSERT_EQ(j.size(), 1u) << j.dump();
  EXPECT_EQ(j[0]["kind"], "ready");
  EXPECT_EQ(j[0]["node"], "solo");
  EXPECT_EQ(j[0]["fleet"], "lab");
}

TEST_F(RecoveryCommandsTest, EventsBadInputIsOneClearMessage) {
  Output since = Tpufleet(app_, {"events", "--since", "yesterday"});
  EXPECT_EQ(since.code, 2);
  EXPECT_TRUE(Contains(since.err,
                       "--since: \"yesterday\" is neither a duration (30m, 2h, 1d) "
                       "nor a time (2026-01-01T12:00:00Z)"))
      << since.err;
  Output node = Tpufleet(app_, {"events", "nosuch"});
  EXPECT_EQ(node.code, 1);
  EXPECT_TRUE(Contains(node.err, "no node named nosuch")) << node.err;
  // A node that is gone (down) still has its log.
  Event("gone", "deleted", "", t_.clock.Now());
  EXPECT_EQ(Tpufleet(app_, {"events", "gone"}).code, 0);
}

// ---------------------------------------------------------------------------------------
// status

TEST_F(RecoveryCommandsTest, StatusSaysServeIsNotRunningAndHowOldTheStatesAre) {
  t_.clock.Advance(minutes(5));  // the records were written at the start
  Output o = Tpufleet(app_, {"status"});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(Contains(o.out,
                       "\nserve: not running; states as of 5m ago (`tpufleet status "
                       "--refresh` asks the cloud)\n"))
      << o.out;
  nlohmann::json j = nlohmann::json::parse(Tpufleet(app_, {"status", "--json"}).out);
  EXPECT_EQ(j["serve"], nlohmann::json({{"running", false}}));
  EXPECT_EQ(j["states_age_seconds"], 300);
}

// A record an older tpufleet wrote without updated_at is as old as its create, not as
// old as the epoch.
TEST_F(RecoveryCommandsTest, AStateWithoutItsUpdateTimeIsAsOldAsItsCreate) {
  std::vector<NodeRecord> nodes = *t_.store->Nodes("lab");
  for (NodeRecord n : nodes) {
    n.created_at = t_.clock.Now();
    n.updated_at = Clock::WallTime{};
    ASSERT_TRUE(t_.store->PutNode(n).ok());
  }
  t_.clock.Advance(minutes(7));
  nlohmann::json j = nlohmann::json::parse(Tpufleet(app_, {"status", "--json"}).out);
  EXPECT_EQ(j["states_age_seconds"], 420);
}

TEST_F(RecoveryCommandsTest, StatusNamesTheRunningServeAndItsLastPass) {
  Clock::WallTime now = t_.clock.Now();
  ASSERT_TRUE(
      t_.store->PutServe({::getpid(), ThisHost(), {"lab"}, now - minutes(9), now - seconds(3)})
          .ok());
  Output o = Tpufleet(app_, {"status"});
  EXPECT_TRUE(Contains(
      o.out, "\nserve: running (pid " + std::to_string(::getpid()) + ", last pass 3s ago)\n"))
      << o.out;
  nlohmann::json j = nlohmann::json::parse(Tpufleet(app_, {"status", "--json"}).out);
  EXPECT_EQ(j["serve"]["running"], true);
  EXPECT_EQ(j["serve"]["pid"], ::getpid());
  EXPECT_EQ(j["serve"]["last_pass_seconds_ago"], 3);
  EXPECT_EQ(j["states_age_seconds"], 3);
}

TEST_F(RecoveryCommandsTest, StatusSaysAServeKilledWithoutEndingIsNotRunning) {
  Clock::WallTime now = t_.clock.Now();
  // Another host's serve, silent for an hour (its pid cannot be checked from here).
  ASSERT_TRUE(
      t_.store->PutServe({4242, "elsewhere.invalid", {"lab"}, now - minutes(90), now - minutes(60)})
          .ok());
  Output o = Tpufleet(app_, {"status"});
  EXPECT_TRUE(Contains(o.out,
                       "serve: not running (pid 4242 ended without a word, last pass "
                       "1h ago); states as of "))
      << o.out;
}

TEST_F(RecoveryCommandsTest, APreemptedNodeIsNeverShownReady) {
  Clock::WallTime t0 = t_.clock.Now();
  Event("pod", "ready", "", t0 - minutes(30));
  Event("pod", "preempted", "signal=agents workers=4", t0 - minutes(1));
  Event("solo", "preempted", "signal=api", t0 - minutes(40));
  Event("solo", "ready", "", t0 - minutes(30));  // recovered since

  Output o = Tpufleet(app_, {"status"});
  EXPECT_TRUE(Contains(LineWith(o.out, "pod "), "PREEMPTED")) << o.out;
  EXPECT_TRUE(Contains(LineWith(o.out, "solo "), "READY")) << o.out;

  // While serve runs, it is recovering it.
  ASSERT_TRUE(t_.store->PutServe({::getpid(), ThisHost(), {"lab"}, t0, t0}).ok());
  Output serving = Tpufleet(app_, {"status"});
  EXPECT_TRUE(Contains(LineWith(serving.out, "pod "), "RECOVERING")) << serving.out;
  nlohmann::json j = nlohmann::json::parse(Tpufleet(app_, {"status", "--json"}).out);
  for (const nlohmann::json& n : j["nodes"]) {
    EXPECT_EQ(n["state"], n["node"] == "pod" ? "RECOVERING" : "READY") << n.dump();
  }
}

TEST_F(RecoveryCommandsTest, StatusShowsTheLastTimeToRecover) {
  Output before = Tpufleet(app_, {"status"});
  EXPECT_FALSE(Contains(before.out, "TTR")) << before.out;
  Recovery(t_.clock.Now() - minutes(5));
  Output o = Tpufleet(app_, {"status"});
  EXPECT_TRUE(Contains(Lines(o.out)[0], "TTR")) << o.out;
  EXPECT_TRUE(Contains(LineWith(o.out, "pod "), "READY")) << o.out;  // ready after the loss
  EXPECT_EQ(Cells(LineWith(o.out, "pod ")).back(), "53.0s") << o.out;
  nlohmann::json j = nlohmann::json::parse(Tpufleet(app_, {"status", "--json"}).out);
  for (const nlohmann::json& n : j["nodes"]) {
    EXPECT_EQ(n.contains("time_to_recover_seconds"), n["node"] == "pod") << n.dump();
  }
}

}  // namespace
}  // namespace tpufleet::cli
