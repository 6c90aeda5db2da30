// `tpufleet run`, `jobs`, `logs`, `cancel` and `attach` through Main, over a TestWorld
// whose workers answer as node agents (FakeAgents): the usage errors and bad input
// (exit 2, nothing started), what each command prints, the exit status that is the
// job's, the gang rule as `run` and `jobs` apply it, and the watcher `run` starts.
// The merging and the rules themselves: control/jobs_test.cc. Against real agents on
// the emulator: test/jobs_e2e.sh.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/testing/lent_world.h"
#include "cli/testing/run_cli.h"
#include "control/testing/job_lab.h"
#include "util/strings.h"

namespace tpufleet::cli {
namespace {

using cli_testing::Contains;
using cli_testing::Output;
using cli_testing::Tpufleet;
using tpufleet::testing::FakeAgents;

class JobCommandsTest : public tpufleet::testing::JobLab {
 protected:
  void SetUp() override {
    JobLab::SetUp();
    t_.world.paths.state_dir = t_.dir.path() + "/state";
    app_.start_detached = [this](const std::vector<std::string>& args, const std::string& log) {
      detached_.push_back(Join(args, " ") + " > " + log);
      return Status::Ok();
    };
  }

  // Expects exit 2 (usage), `message` on stderr, and no job started anywhere.
  void Usage(const std::vector<std::string>& argv, const std::string& message) {
    Output o = Tpufleet(app_, argv);
    EXPECT_EQ(o.code, 2) << Join(argv, " ") << "\n" << o.err;
    EXPECT_TRUE(Contains(o.err, message)) << Join(argv, " ") << "\n" << o.err;
    for (const auto& c : agents_.CallsOf(api::AgentOp::kJobStart)) {
      EXPECT_TRUE(c.request.dry_run) << Join(argv, " ") << ": started on " << c.worker;
    }
  }

  // Every job started on pod ends at once: exit `codes[w]` on worker w, printing a line.
  void EndOnStart(std::vector<int> codes) {
    agents_.on_start = [this, codes](const std::string& worker, api::JobOnWorker& j) {
      int code = codes[static_cast<size_t>(j.worker)];
      j.state = code == 0 ? JobState::kSucceeded : JobState::kFailed;
      j.exit_code = code;
      j.ended_unix_ms = agents_.now_ms + 1000 * (j.worker + 1);
      agents_.worker(worker).stdout_text[j.id] = "hello from " + std::to_string(j.worker) + "\n";
    };
  }

  // A job `id` named `name` running on every worker of pod.
  void PutRunning(const std::string& id, const std::string& name) {
    for (int i = 0; i < 4; ++i) {
      api::JobOnWorker j;
      j.id = id;
      j.name = name;
      j.user = "tester";
      j.started_by = "alice@laptop";
      j.worker = i;
      j.state = JobState::kRunning;
      j.created_unix_ms = agents_.now_ms;
      j.started_unix_ms = agents_.now_ms;
      agents_.Put("pod/w" + std::to_string(i), j);
    }
  }

  int opened_ = 0;
  App app_ = cli_testing::AppLending(t_.world, &opened_);
  std::vector<std::string> detached_;
};

// ---------------------------------------------------------------------------------------
// run

TEST_F(JobCommandsTest, RunUsageErrorsExit2AndStartNothing) {
  const std::string form = "run takes a node, then `--` and the command";
  Usage({"run", "pod", "python3"}, form);  // no `--`
  Usage({"run", "--", "python3"}, form);  // no node
  Usage({"run", "pod", "--"}, form);      // no command
  Usage({"run", "pod", "--env", "NOEQUALS", "--", "true"}, "--env: ");
  Usage({"run", "pod", "--env", "TPUFLEET_RANK=3", "--", "true"}, "TPUFLEET_RANK");
  Usage({"run", "pod", "--name", "Bad Name", "--", "true"}, "--name");
  Usage({"run", "pod:1", "--", "true"}, "a job runs on every worker of its node");
  EXPECT_TRUE(agents_.calls().empty());
}

TEST_F(JobCommandsTest, RunRefusesBadInputWithOneMessageAndStartsNothing) {
  agents_.missing_workdirs = {"/data/nope"};
  Usage({"run", "pod", "--workdir", "/data/nope", "--", "python3", "x.py"},
        "tpufleet: the job was not started: the workdir /data/nope does not exist (on every "
        "worker)\n");
  PutRunning("jqqqqqqq", "train");
  Usage({"run", "pod", "--name", "train", "--", "python3", "x.py"},
        "job jqqqqqqq is named \"train\" and has not ended");
  Output o = Tpufleet(app_, {"run", "empty", "--", "true"});
  EXPECT_EQ(o.code, 1);
  EXPECT_TRUE(Contains(o.err, "empty")) << o.err;
  EXPECT_EQ(o.out, "");
}

TEST_F(JobCommandsTest, RunPrintsTheIdThenEveryWorkersLinesAndExitsWithTheJob) {
  EndOnStart({0, 0, 0, 0});
  Output o = Tpufleet(app_, {"run", "pod", "--", "python3", "train.py", "--lr", "0.1"});
  EXPECT_EQ(o.code, 0) << o.err;
  std::vector<std::string> lines = Split(o.out, '\n');
  ASSERT_EQ(lines.size(), 6u) << o.out;  // the id, four workers, ""
  EXPECT_EQ(lines[0].size(), 8u);
  EXPECT_TRUE(StartsWith(lines[0], "j")) << lines[0];
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(Contains(o.out, "pod/w" + std::to_string(i) + " | hello from " +
                                    std::to_string(i) + "\n"))
        << o.out;
  }
  EXPECT_TRUE(Contains(o.err, "tpufleet: job " + lines[0] + " (python3) started on pod (4 "
                              "workers); its logs follow (Ctrl-C detaches, the job goes on)"))
      << o.err;
  EXPECT_TRUE(Contains(o.err, "tpufleet: job " + lines[0] + " succeeded in ")) << o.err;
  EXPECT_EQ(agents_.CallsOf(api::AgentOp::kJobStart).back().request.job.command,
            "python3 train.py --lr 0.1");
  // The gang watcher, detached, logging beside the state.
  EXPECT_EQ(detached_, (std::vector<std::string>{"jobs --watch " + lines[0] + " > " +
                                                 t_.dir.path() + "/state/job-watchers.log"}));
}

TEST_F(JobCommandsTest, OneWorkerFailingStopsTheOthersAndIsTheExitStatus) {
  agents_.on_start = [](const std::string&, api::JobOnWorker& j) {
    if (j.worker == 2) {
      j.state = JobState::kFailed;
      j.exit_code = 1;
      j.ended_unix_ms = 5;
    }
  };
  Output o = Tpufleet(app_, {"run", "pod", "--name", "exp", "--", "python3", "train.py"});
  EXPECT_EQ(o.code, 1) << o.err;
  std::string id = o.out.substr(0, 8);
  EXPECT_TRUE(Contains(o.err, "job " + id + ": w2 failed first: exit 1; stopped it on pod/w0, "
                              "pod/w1, pod/w3"))
      << o.err;
  EXPECT_TRUE(Contains(o.err, "job " + id + " failed after ")) << o.err;
  EXPECT_EQ(agents_.Job("pod/w3", id).state, JobState::kCancelled);
}

TEST_F(JobCommandsTest, ACommandMissingOnTheWorkersExits127ReportedPerWorker) {
  EndOnStart({127, 127, 127, 127});
  Output o = Tpufleet(app_, {"run", "pod", "--", "pythn3", "train.py"});
  EXPECT_EQ(o.code, 127) << o.err;
  EXPECT_TRUE(Contains(o.err, "w0 failed first: exit 127")) << o.err;
  Output jobs = Tpufleet(app_, {"jobs"});
  EXPECT_TRUE(Contains(jobs.out, " 127x4 ")) << jobs.out;
}

TEST_F(JobCommandsTest, DetachReturnsOnceStartedWithTheIdAlone) {
  Output o = Tpufleet(app_, {"run", "--detach", "pod", "--env", "SEED=1", "--", "sleep", "1d"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out.size(), 9u) << o.out;  // "jxxxxxxx\n"
  EXPECT_TRUE(Contains(o.err, "follow it with: tpufleet logs -f " + o.out.substr(0, 8)));
  EXPECT_TRUE(agents_.CallsOf(api::AgentOp::kJobLogs).empty());
  EXPECT_EQ(agents_.CallsOf(api::AgentOp::kJobStart).back().request.job.env.at("SEED"), "1");
}

TEST_F(JobCommandsTest, WithoutAWayToStartTheWatcherRunSaysWhoKeepsTheGangRule) {
  app_.start_detached = nullptr;
  Output o = Tpufleet(app_, {"run", "--detach", "solo", "--", "true"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(Contains(o.err, "no watcher was started")) << o.err;
}

// ---------------------------------------------------------------------------------------
// jobs, logs, cancel, attach

TEST_F(JobCommandsTest, JobsShowsEachJobsStateExitsWhoAndWhichWorkerFailedFirst) {
  PutRunning("jaaaaaaa", "train");
  for (int i = 0; i < 4; ++i) {
    agents_.End("pod/w" + std::to_string(i), "jaaaaaaa", i == 2 ? 1 : 0, 100 + i);
  }
  Output o = Tpufleet(app_, {"jobs"});
  EXPECT_EQ(o.code, 0) << o.err;
  std::vector<std::string> lines = Split(o.out, '\n');
  EXPECT_TRUE(StartsWith(lines[0], "JOB ")) << o.out;
  EXPECT_TRUE(StartsWith(lines[1], "jaaaaaaa  train  pod   failed  0x2,1,0  alice@laptop"))
      << o.out;
  EXPECT_TRUE(Contains(lines[1], "w2 failed first: exit 1")) << o.out;

  nlohmann::json j = cli_testing::TpufleetJson(app_, {"jobs"});
  ASSERT_EQ(j["jobs"].size(), 1u) << j.dump();
  EXPECT_EQ(j["jobs"][0]["state"], "failed");
  EXPECT_EQ(j["jobs"][0]["first_failure"], "w2 failed first: exit 1");
  EXPECT_EQ(j["jobs"][0]["workers"][2]["exit_code"], 1);
  EXPECT_EQ(j["jobs"][0]["workers"].size(), 4u);
}

TEST_F(JobCommandsTest, JobsStopsAGangItSeesFailingAndNamesTheSilentWorkers) {
  PutRunning("jaaaaaaa", "train");
  agents_.End("pod/w1", "jaaaaaaa", 2, 100);
  agents_.worker("solo/w0").agent_running = false;
  Output o = Tpufleet(app_, {"jobs"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(Contains(o.err, "tpufleet: job jaaaaaaa: w1 failed first: exit 2; stopped it on "
                              "pod/w0, pod/w2, pod/w3\n"))
      << o.err;
  EXPECT_TRUE(Contains(o.err, "warning: the agent is not running on solo/w0: run `tpufleet up`"))
      << o.err;
  // The table shows the job after the stop: every worker's end, w1's exit among them.
  EXPECT_TRUE(Contains(o.out, " TERM,2,TERMx2 ")) << o.out;
}

TEST_F(JobCommandsTest, TheWatcherLogsWhatItStoppedWithTheTimeAndEndsWithTheJob) {
  PutRunning("jaaaaaaa", "train");
  agents_.End("pod/w3", "jaaaaaaa", 1, 100);
  Output o = Tpufleet(app_, {"jobs", "--watch", "jaaaaaaa"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "");
  std::vector<std::string> lines = Split(o.err, '\n');
  ASSERT_EQ(lines.size(), 3u) << o.err;
  EXPECT_EQ(lines[0], "2026-01-01T00:00:00Z job jaaaaaaa: w3 failed first: exit 1; stopped it on "
                      "pod/w0, pod/w1, pod/w2");
  EXPECT_EQ(lines[1], "2026-01-01T00:00:00Z job jaaaaaaa ended: failed");
  EXPECT_EQ(Tpufleet(app_, {"jobs", "--watch", "jnoneyet"}).code, 1);
}

TEST_F(JobCommandsTest, NoJobsSaysSo) {
  Output o = Tpufleet(app_, {"jobs"});
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(o.out, "No jobs.\n");
}

TEST_F(JobCommandsTest, LogsPrefixEveryWorkerOrShowOneAsWritten) {
  PutRunning("jaaaaaaa", "train");
  agents_.worker("pod/w1").stdout_text["jaaaaaaa"] = "loss 1.9\nloss 1.7";
  agents_.worker("pod/w3").stderr_text["jaaaaaaa"] = "warning: slow\n";
  Output o = Tpufleet(app_, {"logs", "train"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "pod/w1 | loss 1.9\npod/w1 | loss 1.7\n");
  EXPECT_EQ(o.err, "pod/w3 | warning: slow\n");
  o = Tpufleet(app_, {"logs", "jaaaaaaa", "--worker", "1", "--tail", "10"});
  EXPECT_EQ(o.out, "loss 1.9\nloss 1.7\n");
  EXPECT_EQ(agents_.CallsOf(api::AgentOp::kJobLogs).back().request.tail, 10);
}

TEST_F(JobCommandsTest, AnUnknownJobIsOneMessageWithTheNearestNames) {
  PutRunning("jaaaaaaa", "train");
  for (const std::string cmd : {"logs", "cancel"}) {
    Output o = Tpufleet(app_, {cmd, "trian"});
    EXPECT_EQ(o.code, 1) << cmd;
    EXPECT_TRUE(StartsWith(o.err, "tpufleet: error: no job \"trian\"")) << o.err;
    EXPECT_TRUE(Contains(o.err, "did you mean")) << o.err;
    EXPECT_EQ(Split(o.err, '\n').size(), 2u) << o.err;
  }
  EXPECT_TRUE(agents_.CallsOf(api::AgentOp::kJobCancel).empty());
  Usage({"logs"}, "logs takes one job");
  Usage({"cancel", "a", "b"}, "cancel takes one job");
  Usage({"cancel", "train", "--grace", "soon"}, "--grace");
}

TEST_F(JobCommandsTest, CancelStopsEveryWorkerAndSaysHowTheJobEnded) {
  PutRunning("jaaaaaaa", "train");
  Output o = Tpufleet(app_, {"cancel", "train", "--grace", "30s"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(StartsWith(o.out, "Job jaaaaaaa (train) cancelled after ")) << o.out;
  std::vector<FakeAgents::Call> cancels = agents_.CallsOf(api::AgentOp::kJobCancel);
  ASSERT_EQ(cancels.size(), 4u);
  EXPECT_EQ(cancels[0].request.grace_seconds, 30);
  o = Tpufleet(app_, {"cancel", "train"});
  EXPECT_TRUE(StartsWith(o.out, "Job jaaaaaaa (train) had already ended: cancelled")) << o.out;
  EXPECT_EQ(agents_.CallsOf(api::AgentOp::kJobCancel).size(), 4u);
}

TEST_F(JobCommandsTest, AttachNeedsATerminal) {
  PutRunning("jaaaaaaa", "train");
  Output o = Tpufleet(app_, {"attach", "train"});
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err,
            "tpufleet: error: attach needs a terminal; `tpufleet logs -f train` shows the job's "
            "output anywhere\n");
}

}  // namespace
}  // namespace tpufleet::cli
