// control/jobs over a TestWorld whose workers answer as node agents (FakeAgents): how a
// job starts (the dry run everywhere first, and a refusal starts nothing), what the
// request carries, how the workers' records merge into one view per job, how a JOB
// argument is found, the gang rule where the CLI applies it (jobs, logs -f, the
// watcher), and the exit status that stands for a job.
#include "control/jobs.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "control/testing/job_lab.h"

namespace tpufleet {
namespace {

using testing::Contains;
using testing::FakeAgents;

constexpr char kId[] = "jabcdefg";

class JobsTest : public testing::JobLab {
 protected:
  RunRequest Request(std::string command = "python3 train.py") {
    RunRequest r;
    r.targets = {"pod"};
    r.command = std::move(command);
    r.started_by = "alice@laptop";
    r.id = kId;
    return r;
  }

  Result<JobView> Start(const RunRequest& r) { return StartJob(t_.world, t_.catalog, r); }

  // Job `id` named `name` on every worker of pod, each in `state`, made at `created`.
  void PutOnPod(const std::string& id, const std::string& name, JobState state,
                int64_t created = 1000) {
    for (int i = 0; i < 4; ++i) {
      api::JobOnWorker j;
      j.id = id;
      j.name = name;
      j.user = "tester";
      j.worker = i;
      j.state = state;
      j.created_unix_ms = created;
      j.world_size = 4;
      agents_.Put("pod/w" + std::to_string(i), j);
    }
  }

  size_t Starts(bool dry_run) {
    size_t n = 0;
    for (const auto& c : agents_.CallsOf(api::AgentOp::kJobStart)) {
      n += c.request.dry_run == dry_run ? 1 : 0;
    }
    return n;
  }

  JobView Find(const std::string& arg) {
    Result<JobView> j = FindJob(t_.world, arg);
    EXPECT_TRUE(j.ok()) << j.status().ToString();
    return j.ok() ? *j : JobView{};
  }

  std::vector<std::string> notes_;
  JobNoteFn note_ = [this](const std::string& n) { notes_.push_back(n); };
};

// ---------------------------------------------------------------------------------------
// Starting

TEST_F(JobsTest, EveryWorkerChecksTheJobBeforeAnyStartsItThenAllStart) {
  Result<JobView> job = Start(Request());
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  std::vector<FakeAgents::Call> starts = agents_.CallsOf(api::AgentOp::kJobStart);
  ASSERT_EQ(starts.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(starts[i].request.dry_run, i < 4) << i;
    EXPECT_EQ(starts[i].request.worker, static_cast<int>(i % 4));
  }
  // Worker 0 runs on a terminal, for `attach`; the others do not.
  EXPECT_TRUE(starts[4].request.job.pty);
  EXPECT_FALSE(starts[5].request.job.pty);
  EXPECT_FALSE(starts[7].request.job.pty);
  EXPECT_EQ(job->id, kId);
  EXPECT_EQ(job->name, "python3");
  EXPECT_EQ(job->node, "pod");
  EXPECT_EQ(job->state, JobState::kRunning);
  ASSERT_EQ(job->workers.size(), 4u);
  EXPECT_EQ(job->workers[3].target.name, "pod/w3");
}

TEST_F(JobsTest, TheRequestCarriesTheNodesTopologyTheEnvAndWhoStartedIt) {
  RunRequest r = Request("FOO=1 ./train.sh --steps 10");
  r.name = "exp-1";
  r.workdir = "code";
  r.env = {{"WANDB_MODE", "offline"}, {"SEED", "1"}, {"SEED", "2"}};
  r.no_wait = true;
  ASSERT_TRUE(Start(r).ok());
  api::JobSpec spec = agents_.CallsOf(api::AgentOp::kJobStart).back().request.job;
  EXPECT_EQ(spec.id, kId);
  EXPECT_EQ(spec.name, "exp-1");
  EXPECT_EQ(spec.command, "FOO=1 ./train.sh --steps 10");
  EXPECT_EQ(spec.workdir, "code");
  EXPECT_EQ(spec.env, (std::map<std::string, std::string>{{"WANDB_MODE", "offline"},
                                                          {"SEED", "2"}}));
  EXPECT_TRUE(spec.accelerator);
  EXPECT_TRUE(spec.no_wait);
  EXPECT_FALSE(spec.keep_going);
  EXPECT_EQ(spec.started_by, "alice@laptop");
  EXPECT_EQ(spec.topology.accelerator_type, "v4-32");
  EXPECT_EQ(spec.topology.chips_per_host, 4);
  EXPECT_EQ(spec.topology.worker_addresses,
            (std::vector<std::string>{"198.18.0.2", "198.18.0.3", "198.18.0.4", "198.18.0.5"}));
}

// On a cloud node SSH reaches the workers' external addresses, but the workers reach
// each other (JAX's coordinator, TPU_WORKER_HOSTNAMES) at their internal ones.
TEST_F(JobsTest, TheTopologyNamesTheWorkersInternalAddresses) {
  NodeRecord pod = t_.Record("pod");
  for (WorkerRecord& w : pod.workers) {
    w.internal_address = "10.130.0." + std::to_string(w.index + 10);
  }
  ASSERT_EQ(t_.store->PutNode(pod), Status::Ok());
  ASSERT_TRUE(Start(Request()).ok());
  api::JobSpec spec = agents_.CallsOf(api::AgentOp::kJobStart).back().request.job;
  EXPECT_EQ(spec.topology.worker_addresses,
            (std::vector<std::string>{"10.130.0.10", "10.130.0.11", "10.130.0.12", "10.130.0.13"}));
}

TEST_F(JobsTest, AWorkdirThatIsNotThereStartsNothingAndSaysSoOnce) {
  RunRequest r = Request();
  r.workdir = "/nope";
  agents_.missing_workdirs = {"/nope"};
  Result<JobView> job = Start(r);
  EXPECT_EQ(job.status(), InvalidArgumentError("the job was not started: the workdir /nope "
                                               "does not exist (on every worker)"));
  EXPECT_EQ(Starts(true), 4u);
  EXPECT_EQ(Starts(false), 0u);
}

TEST_F(JobsTest, AWorkerWithoutItsAgentStartsNothingAnywhere) {
  agents_.worker("pod/w2").agent_running = false;
  Result<JobView> job = Start(Request());
  EXPECT_EQ(job.status(),
            FailedPreconditionError("the job was not started: the agent is not running on "
                                    "pod/w2: run `tpufleet up`"));
  EXPECT_EQ(Starts(false), 0u);
}

TEST_F(JobsTest, ANameALiveJobHasIsRefusedAnEndedOnesIsFree) {
  PutOnPod("jqqqqqqq", "python3", JobState::kRunning);
  Result<JobView> job = Start(Request());
  EXPECT_EQ(job.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(job.status().message(), "job jqqqqqqq is named \"python3\""))
      << job.status().message();
  EXPECT_EQ(Starts(true) + Starts(false), 0u);

  for (int i = 0; i < 4; ++i) {
    agents_.End("pod/w" + std::to_string(i), "jqqqqqqq", 0);
  }
  EXPECT_TRUE(Start(Request()).ok());
}

TEST_F(JobsTest, TheTargetMustBeOneWholeNodeThatHasWorkers) {
  RunRequest r = Request();
  r.targets = {"pod:1-2"};
  EXPECT_EQ(Start(r).status(),
            InvalidArgumentError("a job runs on every worker of its node: pod:1-2 names 2 of "
                                 "pod's 4 workers; name the node: tpufleet run pod -- …"));
  r.targets = {"pod", "solo"};
  EXPECT_EQ(Start(r).status(),
            InvalidArgumentError("a job runs on one node, and pod solo names 2 (pod, solo): "
                                 "start one job per node"));
  r.targets = {"empty"};
  EXPECT_EQ(Start(r).status().code(), StatusCode::kFailedPrecondition);
  r.targets = {"team=nobody"};
  EXPECT_FALSE(Start(r).ok());
  EXPECT_TRUE(agents_.calls().empty());
}

TEST_F(JobsTest, BadNamesEnvAndEmptyCommandsAreRefusedBeforeAnyWorkerIsAsked) {
  RunRequest r = Request();
  r.name = "My Job";
  EXPECT_EQ(Start(r).status().code(), StatusCode::kInvalidArgument);
  r = Request("  ");
  EXPECT_EQ(Start(r).status(), InvalidArgumentError("no command given: put it after `--`"));
  r = Request();
  r.env = {{"TPUFLEET_RANK", "3"}};
  EXPECT_EQ(Start(r).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(agents_.calls().empty());
}

TEST_F(JobsTest, WhenSomeWorkersRefuseTheStartTheOthersAreStopped) {
  agents_.refuse_start["pod/w1"] =
      FailedPreconditionError("the TPU is held by job jzzzzzzz (pid 42, bob: python3 x.py)");
  Result<JobView> job = Start(Request());
  EXPECT_EQ(job.status(),
            FailedPreconditionError("job jabcdefg could not start on every worker: pod/w1: the "
                                    "TPU is held by job jzzzzzzz (pid 42, bob: python3 x.py); "
                                    "it was stopped on the others"));
  std::vector<FakeAgents::Call> cancels = agents_.CallsOf(api::AgentOp::kJobCancel);
  ASSERT_EQ(cancels.size(), 3u);
  EXPECT_EQ(cancels[0].worker, "pod/w0");
  EXPECT_EQ(cancels[2].worker, "pod/w3");
  EXPECT_EQ(agents_.Job("pod/w3", kId).state, JobState::kCancelled);
}

// ---------------------------------------------------------------------------------------
// Views

TEST_F(JobsTest, TheWorkersRecordsMergeIntoOneViewPerJobNewestFirst) {
  PutOnPod("jold1234", "old", JobState::kSucceeded, 1000);
  PutOnPod("jnew1234", "new", JobState::kRunning, 5000);
  agents_.End("pod/w2", "jnew1234", 1, 7000);
  agents_.worker("pod/w3").unreachable = true;
  Result<JobsReport> report = ListJobs(t_.world, {});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->jobs.size(), 2u);
  const JobView& j = report->jobs[0];
  EXPECT_EQ(j.id, "jnew1234");
  EXPECT_EQ(j.state, JobState::kFailed);
  EXPECT_FALSE(j.ended);
  EXPECT_EQ(j.first_failure, "w2 failed first: exit 1");
  ASSERT_EQ(j.workers.size(), 4u);
  EXPECT_FALSE(j.workers[3].known);
  EXPECT_EQ(j.workers[3].status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(report->jobs[1].state, JobState::kSucceeded);
  ASSERT_EQ(report->missing.size(), 1u);
  EXPECT_TRUE(Contains(report->missing[0].message(), "pod/w3"));
}

TEST_F(JobsTest, Issue17AStartedJobsRunIsBilledToWhoRanItAndEndsWhenTheAgentsSaySo) {
  Clock::WallTime started = t_.clock.Now();
  ASSERT_TRUE(Start(Request()).ok());
  RunRequest theirs = Request("python3 eval.py");
  theirs.id = "jmilo123";
  theirs.name = "eval";
  theirs.user = "milo";  // a collaborator's run, through a team server
  ASSERT_TRUE(Start(theirs).ok());
  auto runs = [&] { return *t_.store->JobRuns("", std::nullopt); };
  ASSERT_EQ(runs().size(), 2u);
  EXPECT_EQ(runs()[0].fleet, "lab");
  EXPECT_EQ(runs()[0].node, "pod");
  EXPECT_EQ(runs()[0].id, kId);
  EXPECT_EQ(runs()[0].name, "python3");
  EXPECT_EQ(runs()[0].person, "");  // billed to the fleet's owner, as the node is
  EXPECT_EQ(runs()[0].user, "");
  EXPECT_EQ(runs()[0].start, started);
  EXPECT_FALSE(runs()[0].end.has_value());
  EXPECT_EQ(runs()[1].person, "milo");
  EXPECT_EQ(runs()[1].user, "milo");

  // Listed while it runs, a run goes on; once every worker ended it, it ends when the
  // last did, by the workers' clock.
  ASSERT_TRUE(ListJobs(t_.world, {}).ok());
  EXPECT_FALSE(runs()[0].end.has_value());
  t_.clock.Advance(std::chrono::hours(2));
  int64_t ended_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         (started + std::chrono::hours(1)).time_since_epoch())
                         .count();
  for (int i = 0; i < 4; ++i) {
    agents_.End("pod/w" + std::to_string(i), kId, 0, ended_ms - i);
  }
  ASSERT_TRUE(ListJobs(t_.world, {}).ok());
  EXPECT_EQ(runs()[0].end, started + std::chrono::hours(1));
  EXPECT_FALSE(runs()[1].end.has_value());

  // A job no agent of its node knows any more (its node recreated) ends when that is
  // seen; not while a worker does not answer, as it may still run there.
  for (int i = 0; i < 4; ++i) {
    agents_.worker("pod/w" + std::to_string(i)).jobs.clear();
  }
  agents_.worker("pod/w3").unreachable = true;
  ASSERT_TRUE(ListJobs(t_.world, {}).ok());
  EXPECT_FALSE(runs()[1].end.has_value());
  agents_.worker("pod/w3").unreachable = false;
  ASSERT_TRUE(ListJobs(t_.world, {}).ok());
  EXPECT_EQ(runs()[1].end, t_.clock.Now());
  EXPECT_EQ(runs()[0].end, started + std::chrono::hours(1));  // ended once, kept
}

TEST_F(JobsTest, AJobArgumentIsAnIdOrTheNewestWithTheNameElseADidYouMean) {
  PutOnPod("jold1234", "train", JobState::kSucceeded, 1000);
  PutOnPod("jnew1234", "train", JobState::kSucceeded, 5000);
  EXPECT_EQ(Find("jold1234").id, "jold1234");
  EXPECT_EQ(Find("train").id, "jnew1234");
  Result<JobView> none = FindJob(t_.world, "trian");
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(none.status().message(), "did you mean")) << none.status().message();
}

TEST_F(JobsTest, TheExitStatusStandsForTheFirstFailure) {
  PutOnPod(kId, "t", JobState::kRunning);
  for (int i = 0; i < 4; ++i) {
    agents_.End("pod/w" + std::to_string(i), kId, 0);
  }
  EXPECT_EQ(JobExitCode(Find(kId)), 0);
  agents_.End("pod/w1", kId, 127, 10);
  EXPECT_EQ(JobExitCode(Find(kId)), 127);
  api::JobOnWorker& killed = agents_.Job("pod/w3", kId);
  killed.state = JobState::kFailed;
  killed.exit_code.reset();
  killed.signal = "KILL";
  killed.ended_unix_ms = 5;  // before w1's
  EXPECT_EQ(JobExitCode(Find(kId)), 137);
}

// ---------------------------------------------------------------------------------------
// Cancel and the gang rule

TEST_F(JobsTest, CancelStopsTheWorkersThatHaveNotEnded) {
  PutOnPod(kId, "t", JobState::kRunning);
  agents_.End("pod/w0", kId, 0);
  Result<JobView> job = CancelJob(t_.world, Find(kId), std::chrono::seconds(3));
  ASSERT_TRUE(job.ok());
  std::vector<FakeAgents::Call> cancels = agents_.CallsOf(api::AgentOp::kJobCancel);
  ASSERT_EQ(cancels.size(), 3u);
  EXPECT_EQ(cancels[0].worker, "pod/w1");
  EXPECT_EQ(cancels[0].request.grace_seconds, 3);
  EXPECT_EQ(job->state, JobState::kCancelled);
  EXPECT_TRUE(job->ended);
}

TEST_F(JobsTest, OneFailedWorkerStopsTheOthersUnlessKeepGoing) {
  PutOnPod(kId, "t", JobState::kRunning);
  agents_.End("pod/w2", kId, 1, 10);
  JobView job = Find(kId);
  job.keep_going = true;
  Result<std::vector<std::string>> none = ApplyGangRule(t_.world, job);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_TRUE(agents_.CallsOf(api::AgentOp::kJobCancel).empty());

  job.keep_going = false;
  Result<std::vector<std::string>> stopped = ApplyGangRule(t_.world, job);
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(*stopped, (std::vector<std::string>{"pod/w0", "pod/w1", "pod/w3"}));
  EXPECT_TRUE(job.ended);
  EXPECT_EQ(job.state, JobState::kFailed);
  EXPECT_EQ(job.first_failure, "w2 failed first: exit 1");
}

TEST_F(JobsTest, LogsPrintEachWorkersOutputOrOneWorkers) {
  PutOnPod(kId, "t", JobState::kSucceeded);
  agents_.worker("pod/w0").stdout_text[kId] = "hello from 0\n";
  agents_.worker("pod/w3").stderr_text[kId] = "warn 3\n";
  std::vector<std::string> got;
  JobOutputFn out = [&](const JobWorker& w, std::string_view stream, std::string_view data) {
    got.push_back(w.target.name + " " + std::string(stream) + " " + std::string(data));
  };
  FollowOptions options;
  options.tail = 5;
  ASSERT_TRUE(FollowJob(t_.world, Find(kId), options, out, note_).ok());
  EXPECT_EQ(got, (std::vector<std::string>{"pod/w0 stdout hello from 0\n",
                                           "pod/w3 stderr warn 3\n"}));
  EXPECT_EQ(agents_.CallsOf(api::AgentOp::kJobLogs).back().request.tail, 5);

  got.clear();
  options.worker = 3;
  ASSERT_TRUE(FollowJob(t_.world, Find(kId), options, out, note_).ok());
  EXPECT_EQ(got, (std::vector<std::string>{"pod/w3 stderr warn 3\n"}));
  options.worker = 7;
  EXPECT_EQ(FollowJob(t_.world, Find(kId), options, out, note_).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(JobsTest, FollowingAppliesTheGangRuleWhenAFailureShowsUp) {
  PutOnPod(kId, "t", JobState::kRunning);
  JobView job = Find(kId);  // seen running everywhere
  agents_.End("pod/w1", kId, 3, 10);
  FollowOptions options;
  options.follow = true;
  Result<JobView> after = FollowJob(
      t_.world, job, options, [](const JobWorker&, std::string_view, std::string_view) {}, note_);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(agents_.CallsOf(api::AgentOp::kJobCancel).size(), 3u);
  ASSERT_EQ(notes_.size(), 1u);
  EXPECT_EQ(notes_[0], "job jabcdefg: w1 failed first: exit 3; stopped it on pod/w0, pod/w2, pod/w3");
  EXPECT_TRUE(after->ended);
  EXPECT_EQ(JobExitCode(*after), 3);
}

TEST_F(JobsTest, TheWatcherStopsTheGangAndEndsWithTheJob) {
  PutOnPod(kId, "t", JobState::kRunning);
  agents_.End("pod/w0", kId, 1, 10);
  EXPECT_EQ(WatchJob(t_.world, kId, note_), Status::Ok());
  for (const std::string w : {"pod/w1", "pod/w2", "pod/w3"}) {
    EXPECT_EQ(agents_.Job(w, kId).state, JobState::kCancelled) << w;
  }
  ASSERT_FALSE(notes_.empty());
  EXPECT_EQ(notes_.front(),
            "job jabcdefg: w0 failed first: exit 1; stopped it on pod/w1, pod/w2, pod/w3");
  EXPECT_EQ(notes_.back(), "job jabcdefg ended: failed");
}

TEST_F(JobsTest, TheWatcherOfAJobNoWorkerHasEndsAtOnce) {
  EXPECT_EQ(WatchJob(t_.world, kId, note_).code(), StatusCode::kNotFound);
}

TEST_F(JobsTest, TheWatcherEndsWhenTheNodeIsGone) {
  PutOnPod(kId, "t", JobState::kRunning);
  agents_.worker("pod/w0").unreachable = true;  // the watch breaks: it looks again later
  t_.fanout.clock = &t_.clock;
  int runs = 0;
  t_.fanout.run_time = [&](const FanoutJob&) {
    if (++runs == 10) {
      EXPECT_EQ(t_.store->DeleteNode("lab", "pod"), Status::Ok());  // `down` meanwhile
    } else if (runs == 1000) {
      // A watcher that missed it must still end (no worker answers: it gives up).
      ADD_FAILURE() << "the watcher did not see its node go";
      for (int i = 1; i < 4; ++i) {
        agents_.worker("pod/w" + std::to_string(i)).unreachable = true;
      }
    }
    return std::chrono::nanoseconds(0);
  };
  Status s = WatchJob(t_.world, kId, note_);
  EXPECT_EQ(s, NotFoundError("node pod of job jabcdefg is gone (down); the watcher ends"));
}

TEST_F(JobsTest, TheWatcherGivesUpWhenNoWorkerAnswersForLong) {
  PutOnPod(kId, "t", JobState::kRunning);
  JobView job = Find(kId);
  for (int i = 0; i < 4; ++i) {
    agents_.worker("pod/w" + std::to_string(i)).unreachable = true;
  }
  Status s = WatchJob(t_.world, kId, note_);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Contains(s.message(), "the watcher gives up")) << s.message();
}

}  // namespace
}  // namespace tpufleet
