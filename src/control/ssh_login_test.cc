// The command lines of `tpufleet ssh` and `forward`, and PortForward, against a real sshd
// on 127.0.0.1 (ssh/testing/test_sshd.h) and a real TCP service behind it.
#include "control/ssh_login.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "control/port_forward.h"
#include "ssh/testing/loopback.h"
#include "ssh/testing/temp_dir.h"
#include "ssh/testing/test_sshd.h"
#include "util/file.h"
#include "util/subprocess.h"
#include "util/testing/status_printer.h"
#include "util/unique_fd.h"

namespace tpufleet {
namespace {

using std::chrono::seconds;

WorkerTarget Target(const std::string& alias) {
  WorkerTarget t;
  t.node = "pod";
  t.name = "pod/w0";
  t.alias = alias;
  return t;
}

// A pipe whose read end a test makes readable to stop a forward.
struct StopPipe {
  StopPipe() {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    read_end = UniqueFd(fds[0]);
    write_end = UniqueFd(fds[1]);
  }
  void Stop() { EXPECT_EQ(::write(write_end.get(), "x", 1), 1); }
  UniqueFd read_end;
  UniqueFd write_end;
};

bool Gone(pid_t pid) {
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

TEST(SshLoginArgv, ALoginAndACommandQuotedOnce) {
  EXPECT_EQ(SshLoginArgv("/s/config", Target("pod-w3"), {}, false).value(),
            (std::vector<std::string>{"ssh", "-F", "/s/config", "--", "pod-w3"}));
  EXPECT_EQ(SshLoginArgv("/s/config", Target("pod-w3"), {"ls", "-la", "my dir"}, true).value(),
            (std::vector<std::string>{"ssh", "-F", "/s/config", "-t", "--", "pod-w3",
                                      "ls -la 'my dir'"}));
  EXPECT_EQ(SshLoginArgv("/s/config", Target("-oProxyCommand=x"), {}, false).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(ForwardArgv, LoopbackToTheWorkersLocalhost) {
  EXPECT_EQ(ForwardArgv("/s/config", Target("pod-w0"), 18888, 8888).value(),
            (std::vector<std::string>{"ssh", "-F", "/s/config", "-N", "-o",
                                      "ExitOnForwardFailure=yes", "-o", "ConnectTimeout=10", "-o",
                                      "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3",
                                      "-L", "127.0.0.1:18888:localhost:8888", "--", "pod-w0"}));
  EXPECT_EQ(ForwardArgv("/s/config", Target("pod-w0"), 0, 8888).status().code(),
            StatusCode::kInternal);
  EXPECT_EQ(ForwardArgv("/s/config", Target("pod-w0"), 1, 65536).status().code(),
            StatusCode::kInternal);
  EXPECT_EQ(ForwardArgv("/s/config", Target("a b"), 1, 2).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(ChooseLocalPort, TheSamePortWhenFreeElseAnother) {
  int free_port = ClosedLoopbackPort();
  EXPECT_EQ(ChooseLocalPort(free_port, std::nullopt).value(), free_port);
  EXPECT_EQ(ChooseLocalPort(1, free_port).value(), free_port);

  LoopbackSocket busy(/*listen=*/true);
  ASSERT_GT(busy.port, 0);
  Result<int> other = ChooseLocalPort(busy.port, std::nullopt);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_NE(*other, busy.port);
  EXPECT_GT(*other, 0);
  Result<int> taken = ChooseLocalPort(1, busy.port);
  EXPECT_EQ(taken.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(taken.status().message().find("is in use"), std::string::npos);
}

class SshLoginSshdTest : public TestSshdFixture {
 protected:
  void SetUpWithSshd() override {
    SshHostEntry dead = sshd_->Entry("dead-w0");
    dead.port = ClosedLoopbackPort();
    Result<std::string> config = sshd_->WriteConfig({sshd_->Entry("pod-w0"), dead});
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    config_ = *config;
  }

  std::string config_;
};

// Every word arrives as typed, through ssh's command line and the remote shell.
TEST_F(SshLoginSshdTest, ACommandRunsExactlyAsTyped) {
  std::vector<std::string> words = {"printf", "%s|", "a b", "$HOME", "it's",
                                    "`id`",   "*",   "x;y", "-n"};
  Result<std::vector<std::string>> argv = SshLoginArgv(config_, Target("pod-w0"), words, false);
  ASSERT_TRUE(argv.ok()) << argv.status().ToString();
  Result<ProgramResult> r = RunUserCommand(*argv, "", seconds(30));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0) << r->output << sshd_->Log();
  EXPECT_EQ(r->output, "a b|$HOME|it's|`id`|*|x;y|-n|");
}

TEST_F(SshLoginSshdTest, ForwardCarriesATcpConnectionAndEndsSshWhenStopped) {
  EchoService service;
  ASSERT_GT(service.port(), 0);
  Result<int> local = ChooseLocalPort(ClosedLoopbackPort(), std::nullopt);
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  Result<std::vector<std::string>> argv =
      ForwardArgv(config_, Target("pod-w0"), *local, service.port());
  ASSERT_TRUE(argv.ok()) << argv.status().ToString();
  StopPipe stop;
  std::ostringstream log;
  pid_t pid = -1;
  {
    Result<std::unique_ptr<PortForward>> forward = PortForward::Spawn(*argv, *local);
    ASSERT_TRUE(forward.ok()) << forward.status().ToString();
    pid = (*forward)->pid();
    ASSERT_EQ((*forward)->Wait(stop.read_end.get(), log), PortForward::Event::kListening)
        << (*forward)->ExitMessage() << sshd_->Log();

    EXPECT_EQ(Exchange(*local, "ping\n"), "echo:ping\n");

    stop.Stop();
    EXPECT_EQ((*forward)->Wait(stop.read_end.get(), log), PortForward::Event::kStopped);
  }
  EXPECT_TRUE(Gone(pid)) << "the forward's ssh is ended and reaped with it";
  EXPECT_EQ(log.str().find("open failed"), std::string::npos)
      << "seeing that ssh listens made no connection: " << log.str();
}

TEST_F(SshLoginSshdTest, SshThatCannotConnectExplainsItself) {
  int local = ClosedLoopbackPort();
  Result<std::vector<std::string>> argv = ForwardArgv(config_, Target("dead-w0"), local, 8888);
  ASSERT_TRUE(argv.ok());
  StopPipe stop;
  std::ostringstream log;
  Result<std::unique_ptr<PortForward>> forward = PortForward::Spawn(*argv, local);
  ASSERT_TRUE(forward.ok()) << forward.status().ToString();
  EXPECT_EQ((*forward)->Wait(stop.read_end.get(), log), PortForward::Event::kExited);
  std::string message = (*forward)->ExitMessage();
  EXPECT_NE(message.find("ssh exited with status 255"), std::string::npos) << message;
  EXPECT_NE(message.find("Connection refused"), std::string::npos) << message;
  EXPECT_EQ((*forward)->pid(), -1) << "reaped";
  EXPECT_EQ(log.str(), "") << "what ssh said is in the message, not printed twice";
}

TEST_F(SshLoginSshdTest, AForwardStoppedBeforeItWorksLeavesNoSsh) {
  int local = ClosedLoopbackPort();
  Result<std::vector<std::string>> argv = ForwardArgv(config_, Target("pod-w0"), local, 8888);
  ASSERT_TRUE(argv.ok());
  StopPipe stop;
  stop.Stop();
  std::ostringstream log;
  pid_t pid = -1;
  {
    Result<std::unique_ptr<PortForward>> forward = PortForward::Spawn(*argv, local);
    ASSERT_TRUE(forward.ok()) << forward.status().ToString();
    pid = (*forward)->pid();
    EXPECT_EQ((*forward)->Wait(stop.read_end.get(), log), PortForward::Event::kStopped);
  }
  EXPECT_TRUE(Gone(pid));
}

// A running forward whose connection dropped starts ssh again (the ProxyCommand finds
// the worker's new address), pausing longer each time, and stops only when trying again
// cannot help. End to end: test/resolve_e2e_test.sh.
TEST(Issue11, AForwardRetriesWithBackoffAndGivesUpOnlyWhenNoRetryCanHelp) {
  EXPECT_EQ(ForwardRetryDelay(0), std::chrono::seconds(1));
  EXPECT_EQ(ForwardRetryDelay(1), std::chrono::seconds(2));
  EXPECT_EQ(ForwardRetryDelay(4), std::chrono::seconds(16));
  EXPECT_EQ(ForwardRetryDelay(5), kForwardRetryMax);
  EXPECT_EQ(ForwardRetryDelay(1000), kForwardRetryMax);
  for (const char* transient :
       {"ssh exited with status 255", "ssh exited with status 255: kex_exchange_identification: "
        "Connection closed by remote host",
        "ssh exited with status 255: tpufleet: error: 10.0.0.2:22: No route to host",
        "ssh exited with status 255: Connection to pod-w0 closed by remote host.",
        "ssh was killed by signal 9"}) {
    EXPECT_FALSE(PermanentForwardFailure(transient)) << transient;
  }
  for (const char* permanent :
       {"ssh exited with status 255: Host key verification failed.",
        "ssh exited with status 255: @ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @",
        "ssh exited with status 255: tester@pod-w0: Permission denied (publickey).",
        "ssh exited with status 255: bind [127.0.0.1]:8888: Address already in use",
        "ssh exited with status 255: tpufleet: error: node pod is NOT_FOUND (the cloud says so "
        "now): none of its workers can be reached; `tpufleet up` brings it back",
        "ssh exited with status 255: tpufleet: error: no node named pod in tpufleet's state"}) {
    EXPECT_TRUE(PermanentForwardFailure(permanent)) << permanent;
  }
}

}  // namespace
}  // namespace tpufleet
