// `run`, `logs`, `cancel` and `top --once` as a team server runs them for a client (Main
// with the caller's Access, served): each refusal a collaborator meets (a node they may
// not see is "no node", another's job "no job", a viewer told once why), a member's job
// started as their own account by root through the agent, `logs -f` ended by the
// client going away, and top's live view refused (full screen). Over a
// JobLab whose workers answer as node agents; the real thing: test/serve_jobs_e2e.sh.
#include <gtest/gtest.h>

#include <atomic>
#include <sstream>
#include <string>
#include <vector>

#include "cli/app.h"
#include "cli/testing/lent_world.h"
#include "cli/testing/run_cli.h"
#include "control/testing/job_lab.h"
#include "util/strings.h"

namespace tpufleet::cli {
namespace {

using cli_testing::Contains;
using cli_testing::Output;
using tpufleet::testing::FakeAgents;

class ServedJobsTest : public tpufleet::testing::JobLab {
 protected:
  void SetUp() override {
    JobLab::SetUp();
    // milo: a member on pod alone; ada: a member on every node; vic: a viewer.
    users_ = {Row("milo", "member", {"pod"}), Row("ada", "member", {}),
              Row("vic", "viewer", {})};
  }

  static UserRecord Row(const std::string& name, const std::string& role,
                        std::vector<std::string> nodes) {
    UserRecord u;
    u.fleet = "lab";
    u.name = name;
    u.role = role;
    u.nodes = std::move(nodes);
    return u;
  }

  // `tpufleet ARGV…` as a team server runs it for `who` (the operator: everything).
  Output As(const std::string& who, const std::vector<std::string>& argv) {
    Access access = who == "operator" ? Access::Everything("operator") : Access::Of(who, users_);
    std::ostringstream out;
    std::ostringstream err;
    Output o;
    o.code = static_cast<int>(Main(app_, argv, out, err, {{"HOME", cli_testing::kNoHome}},
                                   Terminal{}, access, /*served=*/true, &gone_));
    o.out = out.str();
    o.err = err.str();
    return o;
  }

  // A job `id` of Unix user `user` running on every worker of pod.
  void PutRunning(const std::string& id, const std::string& user) {
    for (int i = 0; i < 4; ++i) {
      api::JobOnWorker j;
      j.id = id;
      j.name = "train";
      j.user = user;
      j.started_by = user + " via lab";
      j.worker = i;
      j.state = JobState::kRunning;
      j.created_unix_ms = agents_.now_ms;
      j.started_unix_ms = agents_.now_ms;
      agents_.Put("pod/w" + std::to_string(i), j);
      agents_.worker("pod/w" + std::to_string(i)).stdout_text[id] = "step 1 of " + user + "\n";
    }
  }

  size_t Started() const {
    size_t n = 0;
    for (const auto& c : agents_.CallsOf(api::AgentOp::kJobStart)) {
      n += c.request.dry_run ? 0 : 1;
    }
    return n;
  }

  std::vector<UserRecord> users_;
  std::atomic<bool> gone_{false};  // the client went away
  int opened_ = 0;
  App app_ = cli_testing::AppLending(t_.world, &opened_);
};

TEST_F(ServedJobsTest, AMembersRunIsTheirsStartedByRoot) {
  Output o =
      As("milo", {"run", "pod", "--detach", "--name", "train", "--", "python3", "train.py"});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out.size(), 9u) << o.out;  // the id and a newline
  EXPECT_TRUE(Contains(o.err, "follow it with: tpufleet logs -f " + o.out.substr(0, 8))) << o.err;
  std::vector<FakeAgents::Call> starts = agents_.CallsOf(api::AgentOp::kJobStart);
  ASSERT_EQ(starts.size(), 8u);  // the dry run and the start, on each of pod's 4 workers
  for (const FakeAgents::Call& c : starts) {
    EXPECT_EQ(c.request.job.user, "milo");
    EXPECT_TRUE(StartsWith(c.request.job.started_by, "milo via ")) << c.request.job.started_by;
    EXPECT_TRUE(Contains(c.command, "sudo -n ")) << c.command;  // root names the account
  }
  // The operator's job is tpufleet's login's, as a local run's.
  Output op = As("operator", {"run", "solo", "--detach", "--name", "eval", "--", "true"});
  ASSERT_EQ(op.code, 0) << op.err;
  std::vector<FakeAgents::Call> all = agents_.CallsOf(api::AgentOp::kJobStart);
  EXPECT_EQ(all.back().request.job.user, "");
  EXPECT_FALSE(Contains(all.back().command, "sudo")) << all.back().command;
  EXPECT_TRUE(StartsWith(all.back().request.job.started_by, "operator via "));
}

TEST_F(ServedJobsTest, ANameAnothersJobHasIsTakenWithoutSayingWhose) {
  PutRunning("jmmmmmmm", "milo");
  Output o = As("ada", {"run", "pod", "--name", "train", "--", "true"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err, "tpufleet: the name \"train\" is taken by a job of the fleet that has not "
                   "ended; give this one another --name\n");
  Output own = As("milo", {"run", "pod", "--name", "train", "--", "true"});
  EXPECT_TRUE(Contains(own.err, "job jmmmmmmm is named \"train\"")) << own.err;  // his own
  EXPECT_EQ(Started(), 0u);
}

TEST_F(ServedJobsTest, RunOnANodeTheyMayNotSeeIsNoSuchNode) {
  Output hidden = As("milo", {"run", "solo", "--", "true"});
  Output nowhere = As("milo", {"run", "nosuch", "--", "true"});
  EXPECT_EQ(hidden.code, 1);
  EXPECT_EQ(hidden.err,
            "tpufleet: error: no node 'solo' in tpufleet's state (tpufleet status lists them)\n");
  // Exactly as a node that is nowhere: no nearest names from the others' nodes.
  EXPECT_EQ(nowhere.err, "tpufleet: error: no node 'nosuch' in tpufleet's state (tpufleet "
                         "status lists them)\n");
  Output viewer = As("vic", {"run", "pod", "--", "true"});
  EXPECT_EQ(viewer.code, 1);
  EXPECT_EQ(viewer.err, "tpufleet: error: vic is a viewer of fleet lab: a viewer may not start "
                        "jobs (an admin gives the member role: tpufleet users set vic --role "
                        "member)\n");
  Output stale = As("ada", {"run", "pod", "--kill-stale", "--", "true"});
  EXPECT_EQ(stale.code, 2);
  EXPECT_TRUE(Contains(stale.err, "--kill-stale kills a process that may be another's"));
  EXPECT_EQ(Started(), 0u);
  EXPECT_TRUE(agents_.CallsOf(api::AgentOp::kJobStart).empty()) << "not even a dry run";
}

TEST_F(ServedJobsTest, LogsOfAnothersJobIsNoSuchJobAndOwnLogsAreAskedAsRoot) {
  PutRunning("jmmmmmmm", "milo");
  Output theirs = As("ada", {"logs", "jmmmmmmm"});
  Output nowhere = As("ada", {"logs", "jzzzzzzz"});
  EXPECT_EQ(theirs.code, 1);
  EXPECT_EQ(theirs.err, "tpufleet: error: no job \"jmmmmmmm\"\n");
  EXPECT_EQ(nowhere.err, "tpufleet: error: no job \"jzzzzzzz\"\n");
  // By name too, and no "did you mean" naming milo's job.
  Output by_name = As("ada", {"logs", "train"});
  EXPECT_EQ(by_name.err, "tpufleet: error: no job \"train\"\n");
  EXPECT_TRUE(agents_.CallsOf(api::AgentOp::kJobLogs).empty());

  Output own = As("milo", {"logs", "jmmmmmmm", "--tail", "5"});
  EXPECT_EQ(own.code, 0) << own.err;
  EXPECT_TRUE(Contains(own.out, "pod/w3 | step 1 of milo\n")) << own.out;
  std::vector<FakeAgents::Call> logs = agents_.CallsOf(api::AgentOp::kJobLogs);
  ASSERT_FALSE(logs.empty());
  EXPECT_TRUE(Contains(logs[0].command, "sudo -n ")) << "the agent shows milo's job to root";
  EXPECT_EQ(As("operator", {"logs", "jmmmmmmm"}).code, 0);

  // Followed until the client goes away (here: gone from the start), as Ctrl-C ends a
  // local one; serve's signals are not touched.
  gone_ = true;
  Output follow = As("milo", {"logs", "-f", "jmmmmmmm"});
  EXPECT_EQ(follow.code, 130) << follow.err;
  EXPECT_TRUE(Contains(follow.out, "pod/w3 | step 1 of milo\n")) << follow.out;
}

TEST_F(ServedJobsTest, CancelIsTheOwnersOrAnAdminsAndAViewerIsToldOnce) {
  PutRunning("jmmmmmmm", "milo");
  Output theirs = As("ada", {"cancel", "jmmmmmmm"});
  EXPECT_EQ(theirs.code, 1);
  EXPECT_TRUE(Contains(theirs.err, "no job")) << theirs.err;
  Output viewer = As("vic", {"cancel", "jmmmmmmm"});
  EXPECT_EQ(viewer.code, 1);
  EXPECT_EQ(viewer.err, "tpufleet: error: vic is a viewer: a viewer may not cancel jobs (an "
                        "admin gives the member role: tpufleet users set vic --role member)\n");
  EXPECT_TRUE(agents_.CallsOf(api::AgentOp::kJobCancel).empty());

  Output own = As("milo", {"cancel", "jmmmmmmm"});
  EXPECT_EQ(own.code, 0) << own.err;
  std::vector<FakeAgents::Call> cancels = agents_.CallsOf(api::AgentOp::kJobCancel);
  ASSERT_EQ(cancels.size(), 4u);
  EXPECT_TRUE(Contains(cancels[0].command, "sudo -n ")) << cancels[0].command;
}

TEST_F(ServedJobsTest, TopOnceShowsTheirNodesAndTheirOwnHolders) {
  agents_.worker("solo/w0").metrics = tpufleet::testing::WorkerReport(agents_.now_ms, 80, "jaaaaaaa");
  for (int i = 0; i < 4; ++i) {
    agents_.worker("pod/w" + std::to_string(i)).metrics =
        tpufleet::testing::WorkerReport(agents_.now_ms, 80, "jaaaaaaa");
  }
  // alice's job holds every chip but pod/w3's, which milo's holds: milo sees pod's use,
  // his own process, not hers.
  MetricsReport& w3 = *agents_.worker("pod/w3").metrics;
  for (ChipSample& chip : w3.sample.chips) {
    chip.holders = {{77, "milo", "python3 mine.py", "jmmmmmmm"}};
  }
  w3.sample.jobs = {{"jmmmmmmm", "milo", 20, 100, 99, 1 << 30}};
  w3.window.job = "jmmmmmmm";
  Output milo = As("milo", {"top", "--once"});
  EXPECT_TRUE(Contains(milo.out, "pid 77 milo jmmmmmmm python3 mine.py")) << milo.out;
  EXPECT_TRUE(Contains(milo.out, "pod")) << milo.out;
  EXPECT_FALSE(Contains(milo.out, "solo")) << milo.out;
  EXPECT_FALSE(Contains(milo.out, "alice")) << milo.out;
  EXPECT_FALSE(Contains(milo.out, "jaaaaaaa")) << milo.out;
  EXPECT_EQ(As("milo", {"top", "--once", "solo"}).err,
            "tpufleet: error: no node 'solo' in tpufleet's state (tpufleet status lists them)\n");
  Output op = As("operator", {"top", "--once"});
  EXPECT_TRUE(Contains(op.out, "alice")) << op.out;
  EXPECT_TRUE(Contains(op.out, "solo")) << op.out;
  Output live = As("milo", {"top"});
  EXPECT_EQ(live.code, 2);
  EXPECT_TRUE(Contains(live.err, "top's live view does not go through a team server")) << live.err;
}

}  // namespace
}  // namespace tpufleet::cli
