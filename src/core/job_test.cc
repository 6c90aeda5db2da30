// Job states, the first failure, the gang rule, ids, names, the JOB argument and
// durations (core/job.h). The environment's tests are in job_env_test.cc.
#include "core/job.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/testing/status_printer.h"
#include "util/testing/text_cases.h"

namespace tpufleet {
namespace {

using S = JobState;

constexpr S kAllStates[] = {S::kStarting,  S::kWaiting,   S::kRunning, S::kSucceeded,
                            S::kFailed,    S::kCancelled, S::kLost};

std::string Name(S s) { return std::string(NameIn(kJobStateNames, s)); }

TEST(JobStateTest, EveryStateHasItsProtocolName) {
  EXPECT_EQ(NamesIn(kJobStateNames),
            (std::vector<std::string>{"starting", "waiting", "running", "succeeded", "failed",
                                      "cancelled", "lost"}));
  for (S s : kAllStates) {
    EXPECT_EQ(ValueIn(kJobStateNames, Name(s)), s);
  }
  EXPECT_EQ(ValueIn(kJobStateNames, "Running"), std::nullopt);
}

TEST(JobStateTest, EndedStatesAreTheFourThatNeverChange) {
  std::vector<std::string> ended;
  for (S s : kAllStates) {
    if (IsEnded(s)) {
      ended.push_back(Name(s));
    }
  }
  EXPECT_EQ(ended, (std::vector<std::string>{"succeeded", "failed", "cancelled", "lost"}));
  EXPECT_TRUE(AllEnded({S::kSucceeded, S::kFailed, S::kCancelled, S::kLost}));
  EXPECT_FALSE(AllEnded({S::kSucceeded, S::kRunning}));
  EXPECT_TRUE(AllEnded({}));
}

// Each row of JobStateOf's table in job.h, with rows that show it wins over the rows
// below it.
TEST(JobStateTest, MergesWorkersAsTheTableSays) {
  struct Row {
    std::vector<S> workers;
    S job;
  };
  for (const Row& row : std::vector<Row>{
           // any failed -> failed, whatever the others are
           {{S::kFailed}, S::kFailed},
           {{S::kRunning, S::kFailed, S::kRunning, S::kRunning}, S::kFailed},
           {{S::kLost, S::kCancelled, S::kFailed, S::kWaiting}, S::kFailed},
           {{S::kSucceeded, S::kFailed, S::kStarting}, S::kFailed},
           // any lost -> lost
           {{S::kLost}, S::kLost},
           {{S::kRunning, S::kLost}, S::kLost},
           {{S::kCancelled, S::kLost, S::kSucceeded}, S::kLost},
           // any cancelled -> cancelled
           {{S::kCancelled}, S::kCancelled},
           {{S::kCancelled, S::kRunning}, S::kCancelled},
           {{S::kSucceeded, S::kCancelled, S::kWaiting}, S::kCancelled},
           // any waiting -> waiting
           {{S::kWaiting}, S::kWaiting},
           {{S::kRunning, S::kWaiting, S::kStarting}, S::kWaiting},
           {{S::kSucceeded, S::kWaiting}, S::kWaiting},
           // any starting -> starting
           {{S::kStarting}, S::kStarting},
           {{S::kRunning, S::kStarting}, S::kStarting},
           {{S::kSucceeded, S::kStarting}, S::kStarting},
           // any running -> running
           {{S::kRunning}, S::kRunning},
           {{S::kSucceeded, S::kRunning, S::kSucceeded}, S::kRunning},
           // all succeeded -> succeeded
           {{S::kSucceeded}, S::kSucceeded},
           {{S::kSucceeded, S::kSucceeded, S::kSucceeded, S::kSucceeded}, S::kSucceeded},
           // no workers -> lost
           {{}, S::kLost},
       }) {
    std::string workers;
    for (S s : row.workers) {
      workers += Name(s) + " ";
    }
    EXPECT_EQ(Name(JobStateOf(row.workers)), Name(row.job)) << "workers: " << workers;
  }
}

TEST(GangRuleTest, OnceOneFailedOrWasLostTheLiveOnesAreCancelled) {
  struct Row {
    std::vector<S> workers;
    bool keep_going;
    std::vector<size_t> cancel;
  };
  for (const Row& row : std::vector<Row>{
           {{S::kRunning, S::kFailed, S::kRunning, S::kRunning}, false, {0, 2, 3}},
           {{S::kStarting, S::kWaiting, S::kRunning, S::kLost}, false, {0, 1, 2}},
           {{S::kSucceeded, S::kCancelled, S::kFailed, S::kRunning}, false, {3}},
           // keep_going: nothing, ever
           {{S::kRunning, S::kFailed, S::kRunning, S::kRunning}, true, {}},
           // no failure: nothing
           {{S::kRunning, S::kSucceeded, S::kWaiting, S::kStarting}, false, {}},
           {{S::kCancelled, S::kRunning}, false, {}},
           // a failure and nothing left to stop
           {{S::kFailed, S::kSucceeded, S::kCancelled}, false, {}},
           {{}, false, {}},
       }) {
    EXPECT_EQ(GangCancels(row.workers, row.keep_going), row.cancel);
  }
}

WorkerOutcome Outcome(int worker, S state, int64_t ended, std::optional<int> exit_code = {},
                      std::string signal = "", std::string message = "") {
  return WorkerOutcome{.node = "",
                       .worker = worker,
                       .state = state,
                       .exit_code = exit_code,
                       .signal = std::move(signal),
                       .message = std::move(message),
                       .ended_unix_ms = ended};
}

TEST(FirstFailureTest, DescribesHowEachWorkerEnded) {
  EXPECT_EQ(DescribeEnd(Outcome(0, S::kFailed, 5, 1)), "exit 1");
  EXPECT_EQ(DescribeEnd(Outcome(0, S::kFailed, 5, 127)), "exit 127");
  EXPECT_EQ(DescribeEnd(Outcome(0, S::kFailed, 5, std::nullopt, "KILL")), "killed by SIGKILL");
  EXPECT_EQ(DescribeEnd(Outcome(0, S::kFailed, 5, std::nullopt, "",
                                "workdir /data does not exist")),
            "workdir /data does not exist");
  EXPECT_EQ(DescribeEnd(Outcome(0, S::kLost, 0)), "lost (the agent lost track of it)");
  EXPECT_EQ(DescribeEnd(Outcome(0, S::kSucceeded, 5, 0)), "exit 0");
  EXPECT_EQ(DescribeEnd(Outcome(0, S::kRunning, 0)), "running");
}

TEST(FirstFailureTest, TheEarliestEndedFailureThenTheLowestWorker) {
  // w2 exits 1; the gang rule then cancels the others, which end later with TERM.
  std::vector<WorkerOutcome> job = {
      Outcome(0, S::kCancelled, 2000, std::nullopt, "TERM"),
      Outcome(1, S::kCancelled, 2100, std::nullopt, "TERM"),
      Outcome(2, S::kFailed, 1000, 1),
      Outcome(3, S::kFailed, 1500, std::nullopt, "KILL"),
  };
  EXPECT_EQ(FirstFailureLine(job), "w2 failed first: exit 1");
  job[3].ended_unix_ms = 1000;  // a tie: the lower worker
  job[2].worker = 5;
  EXPECT_EQ(FirstFailureLine(job), "w3 failed first: killed by SIGKILL");
  job[3].ended_unix_ms = 0;  // not known: after every known time
  EXPECT_EQ(FirstFailureLine(job), "w5 failed first: exit 1");
}

TEST(FirstFailureTest, NamesTheNodeWhenGivenAndNothingWhenNoneFailed) {
  WorkerOutcome lost = Outcome(1, S::kLost, 10);
  lost.node = "pod-b";
  EXPECT_EQ(FirstFailureLine({Outcome(0, S::kSucceeded, 5, 0), lost}),
            "pod-b/w1 failed first: lost (the agent lost track of it)");
  EXPECT_EQ(FirstFailureLine({Outcome(0, S::kSucceeded, 5, 0),
                              Outcome(1, S::kCancelled, 6, std::nullopt, "TERM")}),
            "");
  EXPECT_EQ(FirstFailure({}), std::nullopt);
}

TEST(JobIdTest, IsJAndSevenBase32CharactersOfTheBytesGiven) {
  EXPECT_EQ(MakeJobId({0, 0, 0, 0, 0}), "jaaaaaaa");
  EXPECT_EQ(MakeJobId({0xff, 0xff, 0xff, 0xff, 0xff}), "j7777777");
  // 0x08 = 00001 000..: the first character is the fifth letter of the alphabet, 'b'.
  EXPECT_EQ(MakeJobId({0x08, 0, 0, 0, 0}), "jbaaaaaa");
  // The last 5 bits are not used; the 7th character is bits 30-34.
  EXPECT_EQ(MakeJobId({0, 0, 0, 0, 0x1f}), "jaaaaaaa");
  EXPECT_EQ(MakeJobId({0, 0, 0, 0, 0x20}), "jaaaaaab");
  for (const JobIdBytes& b : {JobIdBytes{1, 2, 3, 4, 5}, JobIdBytes{0xde, 0xad, 0xbe, 0xef, 0}}) {
    EXPECT_TRUE(CheckJobId(MakeJobId(b)).ok()) << MakeJobId(b);
  }
}

TEST(JobIdTest, AcceptsOnlyWhatMakeJobIdMakes) {
  testing::ExpectAcceptsOnly([](std::string_view id) { return CheckJobId(id); },
                             {"jaaaaaaa", "j7777777", "jq2x7kd3"},
                             {"", "j", "jaaaaaa", "jaaaaaaaa", "kaaaaaaa", "Jaaaaaaa",
                              "jAAAAAAA", "jaaaaaa1", "jaaaaaa8", "../jaaaa", "j/aaaaaa"});
  EXPECT_EQ(CheckJobId("../etc"),
            InvalidArgumentError("job id \"../etc\" is not \"j\" and 7 characters of a-z and 2-7"));
}

TEST(JobNameTest, IsWhatFitsAFileNameAndAPrefix) {
  testing::ExpectAcceptsOnly([](std::string_view n) { return CheckJobName(n); },
                             {"train", "a", "0", "llama-3.1_8b", std::string(63, 'x')},
                             {"", "-x", ".x", "_x", "Train", "a b", "a/b", "a'b", "a:b",
                              std::string(64, 'x')});
  EXPECT_EQ(CheckJobName("My Job"),
            InvalidArgumentError("job name \"My Job\" is not 1 to 63 of a-z, 0-9, '.', '_' "
                                 "and '-', starting with a letter or digit"));
}

TEST(JobNameTest, DefaultIsTheCommandsFirstWordsBasenameMadeValid) {
  testing::ExpectEachGives([](std::string_view c) { return DefaultJobName(c); },
                           {
                               {"python3 train.py --steps 10", "python3"},
                               {"/usr/bin/python3 train.py", "python3"},
                               {"FOO=1 BAR= ./run_All.sh x", "run_all.sh"},
                               {"  \tbash -c 'sleep 1'", "bash"},
                               {"'my prog' x", "my"},
                               {"\"./a b\"", "a"},
                               {"x=1", "job"},
                               {"", "job"},
                               {"...", "job"},
                               {"torchrun+x", "torchrun-x"},
                               {"=x", "x"},
                           });
  EXPECT_EQ(DefaultJobName(std::string(80, 'a')), std::string(63, 'a'));
  for (std::string_view c : {"python3 x", "FOO=1 /a/B@c", "'x y'", "-rf", ""}) {
    EXPECT_TRUE(CheckJobName(DefaultJobName(c)).ok()) << c;
  }
}

JobRef Ref(std::string id, std::string name, bool ended, int64_t created) {
  return JobRef{.id = std::move(id),
                .name = std::move(name),
                .state = ended ? S::kSucceeded : S::kRunning,
                .ended = ended,
                .created_unix_ms = created};
}

TEST(ResolveJobTest, IdThenNewestLiveNameThenNewestEndedName) {
  const std::vector<JobRef> jobs = {
      Ref("jaaaaaaa", "train", true, 100),   // 0
      Ref("jbbbbbbb", "train", false, 200),  // 1: live
      Ref("jccccccc", "train", true, 300),   // 2: newest, ended
      Ref("jddddddd", "eval", true, 100),    // 3
      Ref("jeeeeeee", "eval", true, 400),    // 4
      Ref("jfffffff", "jaaaaaaa", false, 500),  // 5: named like another's id
  };
  struct Row {
    const char* arg;
    size_t index;
  };
  for (const Row& row : {Row{"jccccccc", 2}, Row{"train", 1}, Row{"eval", 4},
                         Row{"jaaaaaaa", 0}}) {
    Result<size_t> r = ResolveJob(row.arg, jobs);
    ASSERT_TRUE(r.ok()) << row.arg << ": " << r.status().ToString();
    EXPECT_EQ(*r, row.index) << row.arg;
  }
}

TEST(ResolveJobTest, UnknownIsNotFoundWithTheClosestNames) {
  const std::vector<JobRef> jobs = {Ref("jaaaaaaa", "train", true, 100),
                                    Ref("jbbbbbbb", "train", false, 200)};
  EXPECT_EQ(ResolveJob("trian", jobs).status(),
            NotFoundError("no job \"trian\" (did you mean train?)"));
  EXPECT_EQ(ResolveJob("zzzz", jobs).status(), NotFoundError("no job \"zzzz\""));
  EXPECT_EQ(ResolveJob("train", {}).status(), NotFoundError("no job \"train\""));
}

TEST(JobNameTest, IsTakenOnlyByAJobThatHasNotEnded) {
  const std::vector<JobRef> jobs = {Ref("jaaaaaaa", "train", true, 100),
                                    Ref("jbbbbbbb", "eval", false, 200)};
  EXPECT_TRUE(CheckNameFree("train", jobs).ok());
  EXPECT_TRUE(CheckNameFree("other", jobs).ok());
  EXPECT_EQ(CheckNameFree("eval", jobs),
            InvalidArgumentError("job jbbbbbbb is named \"eval\" and has not ended (running); "
                                 "give another --name, or cancel jbbbbbbb first"));
}

TEST(JobDurationTest, TwoUnitsAtMostTheSmallerCut) {
  using std::chrono::milliseconds;
  struct Row {
    int64_t ms;
    const char* shown;
  };
  for (const Row& row : {Row{-5000, "0s"}, Row{0, "0s"}, Row{999, "0s"}, Row{45'000, "45s"},
                         Row{59'999, "59s"}, Row{60'000, "1m00s"}, Row{252'000, "4m12s"},
                         Row{3'599'000, "59m59s"}, Row{3'600'000, "1h00m"},
                         Row{7'380'000 + 59'000, "2h03m"}, Row{86'399'000, "23h59m"},
                         Row{86'400'000, "1d00h"}, Row{3 * 86'400'000LL + 4 * 3'600'000, "3d04h"},
                         Row{400 * 86'400'000LL, "400d00h"}}) {
    EXPECT_EQ(FormatJobDuration(milliseconds(row.ms)), row.shown) << row.ms;
  }
}

}  // namespace
}  // namespace tpufleet
