// OpenSshRunner, ProbeSsh and KnownHostKeys against a real sshd on 127.0.0.1
// (ssh/testing/test_sshd.h), and ProbeSsh against sockets that are not SSH servers.
#include "ssh/runner.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "ssh/openssh.h"
#include "ssh/ssh_files.h"
#include "ssh/testing/loopback.h"
#include "ssh/testing/temp_dir.h"
#include "ssh/testing/test_sshd.h"
#include "util/file.h"
#include "util/event_loop.h"
#include "util/strings.h"
#include "util/subprocess.h"
#include "util/testing/status_printer.h"
#include "util/unique_fd.h"

namespace tpufleet {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Every live process whose command line contains `needle`.
std::vector<pid_t> ProcessesMentioning(const std::string& needle) {
  std::vector<pid_t> found;
  DIR* d = ::opendir("/proc");
  while (dirent* e = d != nullptr ? ::readdir(d) : nullptr) {
    long long pid = 0;
    if (!ParseInt(e->d_name, &pid)) {
      continue;
    }
    Result<std::string> cmdline = ReadFile("/proc/" + std::string(e->d_name) + "/cmdline");
    if (cmdline.ok() && cmdline->find(needle) != std::string::npos) {
      found.push_back(static_cast<pid_t>(pid));
    }
  }
  if (d != nullptr) {
    ::closedir(d);
  }
  return found;
}

// Zombie children of this process: a child that was never reaped.
int ZombieChildren() {
  int zombies = 0;
  std::string me = std::to_string(::getpid());
  DIR* d = ::opendir("/proc");
  while (dirent* e = d != nullptr ? ::readdir(d) : nullptr) {
    Result<std::string> stat = ReadFile("/proc/" + std::string(e->d_name) + "/stat");
    if (!stat.ok()) {
      continue;
    }
    // "pid (comm) S ppid ...": comm may hold spaces, so read after the last ')'.
    std::vector<std::string> f = Split(stat->substr(stat->rfind(')') + 2), ' ');
    if (f.size() > 1 && f[0] == "Z" && f[1] == me) {
      ++zombies;
    }
  }
  if (d != nullptr) {
    ::closedir(d);
  }
  return zombies;
}

class SshdTest : public TestSshdFixture {
 protected:
  void SetUpWithSshd() override {
    Result<std::string> config = sshd_->WriteConfig({sshd_->Entry("w0")});
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    config_ = *config;
  }

  std::string config_;
};

TEST_F(SshdTest, ProbeFindsTheServer) {
  EXPECT_EQ(ProbeSsh("127.0.0.1", sshd_->port(), seconds(5)), Status::Ok());
  EXPECT_EQ(ProbeSsh("localhost", sshd_->port(), seconds(5)), Status::Ok());
}

TEST(ProbeSsh, ClosedPortIsUnavailable) {
  Status s = ProbeSsh("127.0.0.1", ClosedLoopbackPort(), seconds(2));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("Connection refused"), std::string::npos) << s.ToString();
}

TEST(ProbeSsh, SilentServerTimesOut) {
  LoopbackSocket silent(true);
  auto start = std::chrono::steady_clock::now();
  Status s = ProbeSsh("127.0.0.1", silent.port, milliseconds(200));
  EXPECT_EQ(s.code(), StatusCode::kTimeout) << s.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(2));
}

TEST(ProbeSsh, OtherProtocolIsUnavailable) {
  LoopbackSocket web(true);
  std::thread server([&] {
    UniqueFd c(::accept(web.fd.get(), nullptr, nullptr));
    const char reply[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
    (void)!::write(c.get(), reply, sizeof reply - 1);
  });
  Status s = ProbeSsh("127.0.0.1", web.port, seconds(5));
  server.join();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
}

TEST(ProbeSsh, UnknownNameIsUnavailable) {
  Status s = ProbeSsh("no-such-host.invalid", 22, seconds(2));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
}

TEST_F(SshdTest, RunsTheScriptExactlyAsWritten) {
  OpenSshRunner runner(config_);
  const std::string script =
      "x='a b'; echo \"$x\" 'single $HOME' \"double \\$literal\" `echo tick`\n"
      "printf '%s|' \"semi;colon\" 'back\\slash' \"it's\" '\"quoted\"'; echo\n"
      "cat <<'EOF'\n"
      "$(not run) && ; | > <\n"
      "EOF\n";
  Result<ProgramResult> r = runner.Run("w0", script, seconds(20));
  ASSERT_TRUE(r.ok()) << r.status().ToString() << "\n" << sshd_->Log();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->output,
            "a b single $HOME double $literal tick\n"
            "semi;colon|back\\slash|it's|\"quoted\"|\n"
            "$(not run) && ; | > <\n");
}

TEST_F(SshdTest, ALargeScriptArrivesWhole) {
  OpenSshRunner runner(config_);
  std::string script = ": '" + std::string(300'000, 'x') + "'\necho done\n";
  Result<ProgramResult> r = runner.Run("w0", script, seconds(20));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->output, "done\n");
}

// up's login checks on ssh-hosts machines ran one `ssh` at a time on up's loop thread,
// blocking it. Start runs them at once, as child processes the loop watches.
TEST_F(SshdTest, Issue11StartRunsSshAtOnceWithoutBlockingTheLoop) {
  OpenSshRunner runner(config_);
  RealClock clock;
  EventLoop loop(clock);
  int ticks = 0;  // the loop's other work while ssh runs
  loop.Every(std::chrono::milliseconds(50), [&](Clock::MonoTime) { ++ticks; });
  std::vector<Result<ProgramResult>> got;
  std::string large(300'000, 'x');  // more than a pipe holds: fed as the child reads
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) {
    runner.Start(loop, "w0", ": '" + large + "'\nsleep 2; echo run" + std::to_string(i) + "\n",
                 seconds(20), [&](Result<ProgramResult> r) { got.push_back(std::move(r)); });
  }
  EXPECT_TRUE(got.empty()) << "Start returns before ssh ends";
  ASSERT_EQ(loop.RunUntil([&] { return got.size() == 3; }), Status::Ok());

  for (const Result<ProgramResult>& r : got) {
    ASSERT_TRUE(r.ok()) << r.status().ToString() << "\n" << sshd_->Log();
    EXPECT_EQ(r->exit_code, 0);
    EXPECT_TRUE(StartsWith(r->output, "run")) << r->output;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5)) << "one after another";
  EXPECT_GE(ticks, 10) << "the loop went on meanwhile";
  // What Run refuses, Start refuses too, through `done`.
  Result<ProgramResult> bad = UnavailableError("no answer");
  runner.Start(loop, "-bad", "true", seconds(5), [&](Result<ProgramResult> r) { bad = r; });
  ASSERT_EQ(loop.RunUntil([&] { return bad.status().code() != StatusCode::kUnavailable; }),
            Status::Ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument) << bad.status().ToString();
}

TEST_F(SshdTest, NonZeroExitIsAResult) {
  OpenSshRunner runner(config_);
  Result<ProgramResult> r = runner.Run("w0", "echo out; echo err >&2; exit 7\n", seconds(20));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 7);
  EXPECT_NE(r->output.find("out\n"), std::string::npos);
  EXPECT_NE(r->output.find("err\n"), std::string::npos);
}

// Issue 11: it was Unavailable, which up retried for minutes; no retry mends it.
TEST_F(SshdTest, WrongPinnedHostKeyIsFailedPreconditionWithTheOfferedFingerprint) {
  TempDir other;
  Result<ProgramResult> gen = RunUserCommand(
      {"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other.path() + "/k"}, "", seconds(30));
  ASSERT_TRUE(gen.ok() && gen->exit_code == 0);
  std::vector<std::string> words =
      Split(std::string(Trim(*ReadFile(other.path() + "/k.pub"))), ' ');
  SshHostEntry e = sshd_->Entry("w0");
  e.host_key = words[0] + " " + words[1];
  Result<std::string> config = sshd_->WriteConfig({e});
  ASSERT_TRUE(config.ok());
  OpenSshRunner runner(*config);
  Result<ProgramResult> r = runner.Run("w0", "echo should-not-run\n", seconds(20));
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status().ToString();
  EXPECT_NE(r.status().message().find("Host key verification failed"), std::string::npos)
      << r.status().ToString();
  EXPECT_NE(r.status().message().find("offered " + SshKeyLineFingerprint(sshd_->host_key())),
            std::string::npos)
      << r.status().ToString();
}

TEST_F(SshdTest, ScanHostKeysSaysWhatTheServerOffers) {
  Result<std::vector<std::string>> keys = ScanHostKeys("127.0.0.1", sshd_->port());
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ(PreferredHostKey(*keys), sshd_->host_key());
  EXPECT_EQ(ScanHostKeys("127.0.0.1", ClosedLoopbackPort()).status().code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(ScanHostKeys("-oX", 22).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(SshdTest, UnknownAliasIsUnavailableAndHostileAliasRefused) {
  OpenSshRunner runner(config_);
  Result<ProgramResult> r = runner.Run("no-such-alias", "true\n", seconds(20));
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
  r = runner.Run("-oProxyCommand=touch /tmp/x", "true\n", seconds(20));
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
}

TEST_F(SshdTest, TimeoutKillsSshAndLeavesNothing) {
  OpenSshRunner runner(config_);
  std::string pid_file = sshd_->dir() + "/remote.pid";
  auto start = std::chrono::steady_clock::now();
  Result<ProgramResult> r =
      runner.Run("w0", "echo $$ > '" + pid_file + "'\nexec sleep 30\n", milliseconds(500));
  EXPECT_EQ(r.status().code(), StatusCode::kTimeout) << r.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5));
  EXPECT_TRUE(ProcessesMentioning(config_).empty()) << "an ssh process outlived the timeout";
  EXPECT_EQ(ZombieChildren(), 0);
  // sshd does not end a session's command when its client vanishes; end ours by pid.
  for (int i = 0; i < 200 && !ReadFile(pid_file).ok(); ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  long long remote = 0;
  if (Result<std::string> text = ReadFile(pid_file); text.ok() && ParseInt(Trim(*text), &remote)) {
    ::kill(static_cast<pid_t>(remote), SIGKILL);
  }
}

TEST_F(SshdTest, KnownHostKeysFindsPlainAndHashedEntries) {
  std::string known = sshd_->dir() + "/known_hosts";
  std::string line = "[127.0.0.1]:" + std::to_string(sshd_->port()) + " " + sshd_->host_key();
  ASSERT_EQ(
      WriteFileAtomic(
          known, "# comment\nother.example " + sshd_->host_key() + "\n" + line + " a comment\n",
          0600),
      Status::Ok());
  Result<std::vector<std::string>> keys = KnownHostKeys("127.0.0.1", sshd_->port(), known);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ(*keys, std::vector<std::string>{sshd_->host_key()});

  // Hashed (HashKnownHosts yes): only ssh-keygen can tell which host a line is for.
  Result<ProgramResult> hashed = RunUserCommand({"ssh-keygen", "-H", "-f", known}, "", seconds(10));
  ASSERT_TRUE(hashed.ok() && hashed->exit_code == 0);
  ASSERT_EQ(ReadFile(known)->find("127.0.0.1"), std::string::npos);
  keys = KnownHostKeys("127.0.0.1", sshd_->port(), known);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ(*keys, std::vector<std::string>{sshd_->host_key()});

  EXPECT_EQ(KnownHostKeys("127.0.0.1", 22, known).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(KnownHostKeys("10.9.9.9", 0, known).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(KnownHostKeys("10.9.9.9", 0, sshd_->dir() + "/missing").status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(KnownHostKeys("-oX", 0, known).status().code(), StatusCode::kInvalidArgument);
}

TEST(RunOpenSsh, MissingProgramSaysToInstallOpenSsh) {
  Result<ProgramResult> r = RunOpenSsh({"tpufleet-no-such-program"}, "", seconds(1));
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status().ToString();
  EXPECT_NE(r.status().message().find("openssh-client"), std::string::npos)
      << r.status().ToString();
}

}  // namespace
}  // namespace tpufleet
