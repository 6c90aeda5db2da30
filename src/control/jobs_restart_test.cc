// Restartable jobs (issue 14): what `run --restart` keeps in the store, RestartJob as
// serve calls it (the stored spec on the node's workers of the time, restarts + 1, the
// limit), and the store's side of `jobs` and `cancel`. Over a TestWorld whose workers
// answer as node agents (FakeAgents).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "control/jobs.h"
#include "control/testing/job_lab.h"

namespace tpufleet {
namespace {

using testing::FakeAgents;

constexpr char kRestartedId[] = "jabcdefg";

class RestartTest : public testing::JobLab {
 protected:
  RunRequest Request(std::string restart, int max_restarts = 3) {
    RunRequest r;
    r.targets = {"pod"};
    r.command = "python3 train.py --resume";
    r.started_by = "alice@laptop";
    r.id = kRestartedId;
    r.env = {{"DATA", "/gcs/data"}};
    r.restart = std::move(restart);
    r.max_restarts = max_restarts;
    return r;
  }

  Result<JobView> Start(const RunRequest& r) { return StartJob(t_.world, t_.catalog, r); }

  std::vector<JobRecord> Kept() {
    Result<std::vector<JobRecord>> jobs = t_.store->Jobs("");
    EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
    return jobs.ok() ? *jobs : std::vector<JobRecord>{};
  }

  // The events of `kind`, oldest first.
  std::vector<EventRecord> Events(const std::string& kind) {
    EventQuery q;
    q.kind = kind;
    Result<std::vector<EventRecord>> e = t_.store->Events(q);
    EXPECT_TRUE(e.ok());
    return e.ok() ? *e : std::vector<EventRecord>{};
  }

  // pod as a recreate leaves it: new workers (new addresses), whose agents know no job.
  void Recreate() {
    std::vector<NodeRecord> nodes = *t_.store->Nodes("lab");
    for (NodeRecord& n : nodes) {
      if (n.name != "pod") {
        continue;
      }
      for (WorkerRecord& w : n.workers) {
        w.address = "198.18.9." + std::to_string(w.index + 2);
        w.internal_address = "10.9.0." + std::to_string(w.index + 2);
      }
      ASSERT_TRUE(t_.store->PutNode(n).ok());
    }
    for (int i = 0; i < 4; ++i) {
      agents_.worker("pod/w" + std::to_string(i)).jobs.clear();
    }
  }

  size_t RealStarts() {
    size_t n = 0;
    for (const FakeAgents::Call& c : agents_.CallsOf(api::AgentOp::kJobStart)) {
      n += c.request.dry_run ? 0 : 1;
    }
    return n;
  }
};

TEST_F(RestartTest, RunWithRestartKeepsTheSpecForTheStoreWithoutItsWorkers) {
  Result<JobView> job = Start(Request("on-preemption", 3));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ASSERT_TRUE(job->restartable.has_value());
  std::vector<JobRecord> kept = Kept();
  ASSERT_EQ(kept.size(), 1u);
  const JobRecord& r = kept[0];
  EXPECT_EQ(r.fleet, "lab");
  EXPECT_EQ(r.node, "pod");
  EXPECT_EQ(r.id, kRestartedId);
  EXPECT_EQ(r.name, "python3");
  EXPECT_EQ(r.restart, "on-preemption");
  EXPECT_EQ(r.max_restarts, 3);
  EXPECT_EQ(r.restarts, 0);
  EXPECT_EQ(r.state, "active");
  Result<api::JobSpec> spec = api::ParseJobSpec(r.spec_json);
  ASSERT_TRUE(spec.ok()) << r.spec_json;
  EXPECT_EQ(spec->command, "python3 train.py --resume");
  EXPECT_EQ(spec->env.at("DATA"), "/gcs/data");
  EXPECT_EQ(spec->started_by, "alice@laptop");
  EXPECT_TRUE(spec->accelerator);
  EXPECT_TRUE(spec->topology.worker_addresses.empty()) << r.spec_json;  // the restart's
}

TEST_F(RestartTest, WithoutARestartPolicyNothingIsKept) {
  ASSERT_TRUE(Start(Request("")).ok());
  RunRequest never = Request("never");
  never.id = "jbbbbbbb";
  never.name = "other";
  ASSERT_TRUE(Start(never).ok());
  EXPECT_TRUE(Kept().empty());
}

TEST_F(RestartTest, ABadPolicyOrLimitIsRefusedBeforeAnyWorkerIsAsked) {
  Result<JobView> bad = Start(Request("always"));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "--restart: \"always\" is not a policy; one of on-preemption, on-failure, never");
  Result<JobView> many = Start(Request("on-failure", kMaxMaxRestarts + 1));
  EXPECT_EQ(many.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(many.status().message().find("--max-restarts"), std::string::npos);
  EXPECT_TRUE(agents_.calls().empty());
  EXPECT_TRUE(Kept().empty());
}

TEST_F(RestartTest, ARestartStartsTheStoredSpecOnTheRecreatedNodesWorkers) {
  ASSERT_TRUE(Start(Request("on-preemption")).ok());
  Recreate();
  size_t before = agents_.calls().size();
  JobRecord job = Kept()[0];
  t_.clock.Advance(std::chrono::minutes(3));
  Result<JobView> view = RestartJob(t_.world, t_.catalog, job, "preempted");
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_EQ(view->restarts, 1);
  EXPECT_EQ(view->state, JobState::kRunning);

  // A dry run on every worker, then the start, each with the new addresses and restarts 1.
  std::vector<FakeAgents::Call> calls(agents_.calls().begin() + static_cast<long>(before),
                                      agents_.calls().end());
  ASSERT_EQ(calls.size(), 8u);
  for (size_t i = 0; i < calls.size(); ++i) {
    const api::JobSpec& spec = calls[i].request.job;
    EXPECT_EQ(calls[i].request.dry_run, i < 4);
    EXPECT_EQ(spec.id, kRestartedId);
    EXPECT_EQ(spec.restarts, 1);
    EXPECT_EQ(spec.command, "python3 train.py --resume");
    ASSERT_EQ(spec.topology.worker_addresses.size(), 4u);
    EXPECT_EQ(spec.topology.worker_addresses[0], "10.9.0.2");
  }

  JobRecord stored = Kept()[0];
  EXPECT_EQ(stored.restarts, 1);
  EXPECT_EQ(stored.last_reason, "preempted");
  EXPECT_EQ(stored.state, "active");
  EXPECT_EQ(stored.updated_at, t_.clock.Now());
  EXPECT_EQ(job.restarts, 1);  // the caller's copy too
  std::vector<EventRecord> resumed = Events("job-resumed");
  ASSERT_EQ(resumed.size(), 1u);
  EXPECT_EQ(resumed[0].node, "pod");
  EXPECT_EQ(resumed[0].detail, std::string("job=") + kRestartedId + " restarts=1");

  // `jobs` shows the restarts the workers report.
  Result<JobsReport> listed = ListJobs(t_.world, {});
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->jobs.size(), 1u);
  EXPECT_EQ(listed->jobs[0].restarts, 1);
  EXPECT_TRUE(listed->jobs[0].restartable.has_value());
}

TEST_F(RestartTest, AtItsLimitAJobGivesUpAndNothingStarts) {
  ASSERT_TRUE(Start(Request("on-failure", 1)).ok());
  JobRecord job = Kept()[0];
  ASSERT_TRUE(RestartJob(t_.world, t_.catalog, job, "failed (exit 1)").ok());
  size_t starts = RealStarts();
  Result<JobView> again = RestartJob(t_.world, t_.catalog, job, "failed (exit 1)");
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(again.status().message(),
            std::string("job ") + kRestartedId +
                " (python3) gave up: failed (exit 1) after 1 restarts, its limit (--max-restarts)");
  EXPECT_EQ(RealStarts(), starts);
  EXPECT_EQ(Kept()[0].state, "gave-up");
  ASSERT_EQ(Events("job-gave-up").size(), 1u);

  // Given up, it is never started again.
  Result<JobView> after = RestartJob(t_.world, t_.catalog, job, "preempted");
  EXPECT_EQ(after.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(RealStarts(), starts);
}

TEST_F(RestartTest, ARestartThatCannotStartStoresNothing) {
  ASSERT_TRUE(Start(Request("on-preemption")).ok());
  Recreate();
  agents_.missing_workdirs = {""};  // the new workers refuse the dry run
  JobRecord job = Kept()[0];
  Result<JobView> view = RestartJob(t_.world, t_.catalog, job, "preempted");
  EXPECT_FALSE(view.ok());
  EXPECT_EQ(Kept()[0].restarts, 0);
  EXPECT_TRUE(Events("job-resumed").empty());
}

TEST_F(RestartTest, CancelEndsTheRecordSoServeDoesNotRestartIt) {
  ASSERT_TRUE(Start(Request("on-preemption")).ok());
  Result<JobView> job = FindJob(t_.world, kRestartedId);
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(CancelJob(t_.world, *job, std::chrono::seconds(3)).ok());
  JobRecord kept = Kept()[0];
  EXPECT_EQ(kept.state, "done");
  EXPECT_EQ(kept.last_reason, "cancelled");
  EXPECT_EQ(RestartJob(t_.world, t_.catalog, kept, "preempted").status().code(),
            StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tpufleet
