// `tpufleet exec` through Main with a FakeFanout: usage, targets, exit status, the words
// reaching the job quoted once. What it prints: exec_output_test.cc. Against real
// workers: test/exec_e2e_test.sh.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/fleet_world.h"
#include "cli/testing/lab_node.h"
#include "cli/testing/lent_world.h"
#include "cli/testing/run_cli.h"
#include "control/exec.h"
#include "control/testing/test_world.h"
#include "util/strings.h"

namespace tpufleet::cli {
namespace {

using cli_testing::Contains;
using cli_testing::Output;
using cli_testing::Tpufleet;

// ---------------------------------------------------------------------------------------
// `tpufleet exec` through Main, with a FakeFanout

// Fleet "lab": pod (4 workers) and eval (1), both with pinned keys.
class ExecCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Put("pod", 4);
    Put("eval", 1);
    // Each worker prints its hostname, as `hostname` would: "pod/w2" -> "pod-host-2".
    t_.fanout.respond = [](const FanoutHost& host, size_t index, FanoutSink& sink) {
      std::string node = host.name.substr(0, host.name.find('/'));
      std::string worker = host.name.substr(host.name.find("/w") + 2);
      sink.OnOutput(index, OutputStream::kStdout, node + "-host-" + worker + "\n");
      return HostResult{};
    };
  }
  void Put(const std::string& name, int workers) {
    NodeRecord r = cli_testing::ReadyLabNode(name, workers, nodes_);
    for (WorkerRecord& w : r.workers) {
      w.hostname = name + "-host-" + std::to_string(w.index);
    }
    ++nodes_;
    ASSERT_EQ(t_.store->PutNode(r), Status::Ok());
  }

  // Expects exit 2 (usage), `message` on stderr, and no job.
  void Usage(const std::vector<std::string>& argv, const std::string& message) {
    Output o = Tpufleet(app_, argv);
    EXPECT_EQ(o.code, 2) << Join(argv, " ") << "\n" << o.err;
    EXPECT_TRUE(Contains(o.err, message)) << Join(argv, " ") << "\n" << o.err;
    EXPECT_TRUE(t_.fanout.jobs.empty()) << Join(argv, " ");
  }

  testing::TestWorld t_;
  int nodes_ = 0;
  int opened_ = 0;
  App app_ = cli_testing::AppLending(t_.world, &opened_);
};

TEST_F(ExecCommandTest, UsageErrorsExit2BeforeTheWorldIsOpened) {
  const std::string form = "exec takes targets, then `--` and the command";
  Usage({"exec", "pod", "hostname"}, form);  // no `--`
  Usage({"exec", "pod"}, form);
  Usage({"exec", "--", "hostname"}, form);  // no targets
  Usage({"exec", "pod", "--"}, form);       // nothing after `--`
  Usage({"exec"}, form);
  Usage({"exec", "pod", "--timeout", "soon", "--", "true"}, "--timeout: expected a duration");
  Usage({"exec", "pod", "--timeout", "0s", "--", "true"}, "--timeout");
  Usage({"exec", "pod", "--connect-timeout", "x", "--", "true"}, "--connect-timeout");
  Usage({"exec", "pod", "--fanout", "0", "--", "true"}, "--fanout");
  Usage({"exec", "pod", "--fanout", "many", "--", "true"}, "--fanout");
  Usage({"exec", "pod", "--bogus", "--", "true"}, "unknown flag '--bogus'");
  EXPECT_EQ(opened_, 0);
}

TEST_F(ExecCommandTest, TargetErrorsExit1WithTheReasonAndRunNothing) {
  Output unknown = Tpufleet(app_, {"exec", "podd", "--", "hostname"});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_TRUE(Contains(unknown.err, "no node 'podd' in tpufleet's state; did you mean 'pod'?"))
      << unknown.err;
  Output range = Tpufleet(app_, {"exec", "pod:9", "--", "hostname"});
  EXPECT_EQ(range.code, 1);
  EXPECT_TRUE(Contains(range.err, "'pod:9'")) << range.err;
  EXPECT_TRUE(t_.fanout.jobs.empty());
  EXPECT_EQ(unknown.out + range.out, "");
}

TEST_F(ExecCommandTest, EveryWorkerExitingZeroIsExit0WithPrefixedLines) {
  Output o = Tpufleet(app_, {"exec", "all", "--", "hostname"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out,
            "[eval/w0] eval-host-0\n"
            "[pod/w0] pod-host-0\n[pod/w1] pod-host-1\n[pod/w2] pod-host-2\n"
            "[pod/w3] pod-host-3\n");
  EXPECT_EQ(o.err, "");
  ASSERT_EQ(t_.fanout.jobs.size(), 1u);
  const FanoutJob& job = t_.fanout.jobs[0];
  ASSERT_EQ(job.hosts.size(), 5u);
  EXPECT_EQ(job.hosts[1].address, "198.18.0.2");
  EXPECT_EQ(job.hosts[1].user, "tester");
  EXPECT_EQ(job.hosts[1].host_key, testing::kAliceKey);
  EXPECT_FALSE(job.fail_fast);
  EXPECT_EQ(job.command_timeout.count(), 0);
  EXPECT_EQ(job.connect_timeout, kFanoutConnectTimeout);
}

TEST_F(ExecCommandTest, OneFailedWorkerIsExit1AndNamedInTheSummary) {
  t_.fanout.respond = [](const FanoutHost& host, size_t, FanoutSink&) {
    HostResult r;
    if (host.name == "pod/w2") {
      r.exit_code = 3;
      r.message = "exit 3";
    }
    return r;
  };
  Output o = Tpufleet(app_, {"exec", "pod", "--", "false"});
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "tpufleet: 1 of 4 workers failed:\n  pod/w2: exit 3\n");
}

TEST_F(ExecCommandTest, TheWordsAfterDashDashReachTheJobQuotedOnce) {
  // Flags after `--` are the command's, not tpufleet's (--json, --timeout, a second --).
  std::vector<std::string> words = {"printf",    "%s|\\n", "a b", "$HOME", "x;y",
                                    "it's",      "l1\nl2", "\\",  "*",     "--json",
                                    "--timeout", "x",      "--",  "-n"};
  std::vector<std::string> argv = {"exec", "pod:1-2", "eval:0", "--"};
  argv.insert(argv.end(), words.begin(), words.end());
  Output o = Tpufleet(app_, argv);
  EXPECT_EQ(o.code, 0) << o.err;
  ASSERT_EQ(t_.fanout.jobs.size(), 1u);
  const FanoutJob& job = t_.fanout.jobs[0];
  EXPECT_EQ(job.command, StoppableCommand(words));
  EXPECT_TRUE(Contains(job.command, ShellQuote(ShellJoin(words)))) << job.command;
  EXPECT_TRUE(job.hold_stdin);
  EXPECT_EQ(job.command_timeout.count(), 0) << "--timeout after `--` is the command's";
  EXPECT_TRUE(StartsWith(o.out, "[eval/w0] ")) << "--json after `--` is the command's: " << o.out;
  ASSERT_EQ(job.hosts.size(), 3u);
  EXPECT_EQ(job.hosts[0].name, "eval/w0");
  EXPECT_EQ(job.hosts[1].name, "pod/w1");
  EXPECT_EQ(job.hosts[2].name, "pod/w2");
}

TEST_F(ExecCommandTest, FlagsReachTheJob) {
  Output o = Tpufleet(app_, {"exec", "pod", "--fail-fast", "--timeout", "2m", "--connect-timeout",
                             "5s",
                       "--fanout", "3", "--", "true"});
  EXPECT_EQ(o.code, 0) << o.err;
  ASSERT_EQ(t_.fanout.jobs.size(), 1u);
  const FanoutJob& job = t_.fanout.jobs[0];
  EXPECT_TRUE(job.fail_fast);
  EXPECT_EQ(job.command_timeout, std::chrono::minutes(2));
  EXPECT_EQ(job.connect_timeout, std::chrono::seconds(5));
  EXPECT_EQ(job.max_parallel, 3u);
}

TEST_F(ExecCommandTest, GroupFoldsTheSameOutput) {
  t_.fanout.respond = [](const FanoutHost&, size_t index, FanoutSink& sink) {
    sink.OnOutput(index, OutputStream::kStdout, "same\n");
    return HostResult{};
  };
  Output o = Tpufleet(app_, {"exec", "all", "--group", "--", "echo", "same"});
  EXPECT_EQ(o.code, 0) << o.err;
  std::string title = "eval/w0, pod/w[0-3] (5)";
  std::string rule(title.size(), '-');
  EXPECT_EQ(o.out, rule + "\n" + title + "\n" + rule + "\nsame\n");
}

TEST_F(ExecCommandTest, JsonPrintsOneDocument) {
  t_.fanout.respond = [](const FanoutHost& host, size_t index, FanoutSink& sink) {
    sink.OnOutput(index, OutputStream::kStdout, host.name + "\n");
    HostResult r;
    if (host.name == "pod/w3") {
      r.outcome = HostOutcome::kUnreachable;
      r.message = "connect: No route to host";
    }
    return r;
  };
  Output o = Tpufleet(app_, {"exec", "pod", "--json", "--", "hostname"});
  EXPECT_EQ(o.code, 1);
  nlohmann::json j = nlohmann::json::parse(o.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << o.out;
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["failed"], 1);
  ASSERT_EQ(j["workers"].size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const nlohmann::json& w = j["workers"][static_cast<size_t>(i)];
    EXPECT_EQ(w["worker"], "pod/w" + std::to_string(i));
    EXPECT_EQ(w["stdout"], "pod/w" + std::to_string(i) + "\n");
    EXPECT_EQ(w["ok"], i != 3);
  }
  EXPECT_EQ(j["workers"][3]["outcome"], "unreachable");
  EXPECT_TRUE(Contains(o.err, "pod/w3: unreachable: connect: No route to host")) << o.err;
}

}  // namespace
}  // namespace tpufleet::cli
