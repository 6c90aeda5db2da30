// RunSshProcesses with plain programs in place of ssh (sh -c …): each host's output
// reaches the sink on its stream, one result per host; how ssh ended reads as the
// engine's outcomes; fail_fast stops the rest; a held stdin closes when the run stops.
#include "control/ssh_processes.h"

#include <sys/wait.h>

#include <gtest/gtest.h>

namespace tpufleet {
namespace {

// 255 and ssh's last words, as waitpid gives them.
int Exited(int code) { return code << 8; }

TEST(SshProcessResult, ReadsHowSshEnded) {
  EXPECT_TRUE(SshProcessResult(Exited(0), "").ok());
  HostResult r = SshProcessResult(Exited(3), "Host key verification failed.\n");
  EXPECT_EQ(r.outcome, HostOutcome::kExited);  // the command's own 3
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(SshProcessResult(Exited(255), "@@@\nHost key verification failed.\n").outcome,
            HostOutcome::kHostKeyMismatch);
  r = SshProcessResult(Exited(255), "milo@198.18.0.7: Permission denied (publickey).\n");
  EXPECT_EQ(r.outcome, HostOutcome::kAuthFailed);
  EXPECT_EQ(r.message, "milo@198.18.0.7: Permission denied (publickey).");
  r = SshProcessResult(Exited(255), "ssh: connect to host 198.18.0.7 port 22: Connection refused\n");
  EXPECT_EQ(r.outcome, HostOutcome::kUnreachable);
  EXPECT_EQ(r.message, "ssh: connect to host 198.18.0.7 port 22: Connection refused");
  EXPECT_EQ(SshProcessResult(SIGKILL, "").outcome, HostOutcome::kSignaled);
}

class Record final : public FanoutSink {
 public:
  explicit Record(size_t hosts) : out(hosts), err(hosts), results(hosts), done(hosts, 0) {}
  void OnOutput(size_t host, OutputStream stream, std::string_view data) override {
    (stream == OutputStream::kStdout ? out : err)[host].append(data);
  }
  void OnResult(size_t host, const HostResult& result) override {
    results[host] = result;
    ++done[host];
    order.push_back(host);
  }
  std::vector<std::string> out, err;
  std::vector<HostResult> results;
  std::vector<int> done;
  std::vector<size_t> order;
};

std::vector<std::string> Sh(const std::string& script) { return {"sh", "-c", script}; }

TEST(RunSshProcesses, EachHostsStreamsAndOneResultEach) {
  SshProcessJob job;
  job.programs = {Sh("echo out0; echo err0 >&2"), Sh("echo out1; exit 4"), Sh("exit 255")};
  Record sink(3);
  ASSERT_TRUE(RunSshProcesses(job, sink).ok());
  EXPECT_EQ(sink.out[0], "out0\n");
  EXPECT_EQ(sink.err[0], "err0\n");
  EXPECT_EQ(sink.out[1], "out1\n");
  EXPECT_EQ(sink.done, (std::vector<int>{1, 1, 1}));
  EXPECT_TRUE(sink.results[0].ok());
  EXPECT_EQ(sink.results[1].exit_code, 4);
  EXPECT_EQ(sink.results[2].outcome, HostOutcome::kUnreachable);
}

TEST(RunSshProcesses, OneAtATimeInOrderAndFailFastStopsTheRest) {
  SshProcessJob job;
  job.max_parallel = 1;
  job.fail_fast = true;
  job.programs = {Sh("true"), Sh("exit 1"), Sh("echo never")};
  Record sink(3);
  ASSERT_TRUE(RunSshProcesses(job, sink).ok());
  EXPECT_EQ(sink.order, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(sink.results[2].outcome, HostOutcome::kCancelled);
  EXPECT_EQ(sink.out[2], "");
}

TEST(RunSshProcesses, AHeldStdinEndsWhenTheFirstFailureStopsTheRun) {
  // `cat` ends only when its stdin closes: the failure of the other host closes it.
  SshProcessJob job;
  job.hold_stdin = true;
  job.fail_fast = true;
  job.programs = {Sh("cat"), Sh("exit 2")};
  Record sink(2);
  ASSERT_TRUE(RunSshProcesses(job, sink).ok());
  EXPECT_EQ(sink.results[1].exit_code, 2);
  EXPECT_EQ(sink.results[0].outcome, HostOutcome::kCancelled);
}

TEST(RunSshProcesses, AProgramNotInstalledIsTheRunsError) {
  SshProcessJob job;
  job.programs = {{"tpufleet-no-such-ssh"}};
  Record sink(1);
  Status s = RunSshProcesses(job, sink);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.message();
  EXPECT_EQ(sink.done[0], 0);
}

}  // namespace
}  // namespace tpufleet
