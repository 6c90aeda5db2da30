// The libssh2 engine against a real OpenSSH server (TestSshd): several "hosts" are the
// same server reached again, which is what the engine sees of a pod's workers.
#include "ssh/fanout_engine.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "ssh/ssh_files.h"
#include "ssh/testing/loopback.h"
#include "ssh/testing/temp_dir.h"
#include "ssh/testing/test_sshd.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/subprocess.h"
#include "util/testing/fake_clock.h"
#include "util/testing/status_printer.h"

namespace tpufleet {
namespace {

using std::chrono::milliseconds;

// What a job reported, per host.
struct Recorded {
  std::map<size_t, std::string> out, err;
  std::map<size_t, HostResult> results;
};

class RecordingSink : public FanoutSink, public Recorded {
 public:
  void OnOutput(size_t host, OutputStream stream, std::string_view data) override {
    (stream == OutputStream::kStdout ? out : err)[host] += std::string(data);
  }
  void OnResult(size_t host, const HostResult& result) override {
    EXPECT_EQ(results.count(host), 0u) << "two results for host " << host;
    results[host] = result;
  }
};

class FanoutEngineTest : public TestSshdFixture {
 protected:
  FanoutHost Host(const std::string& name) const {
    FanoutHost h;
    h.name = name;
    h.address = "127.0.0.1";
    h.port = sshd_->port();
    h.user = sshd_->user();
    h.host_key = sshd_->host_key();
    return h;
  }
  FanoutJob Job(std::vector<FanoutHost> hosts, std::string command) const {
    FanoutJob job;
    job.hosts = std::move(hosts);
    job.command = std::move(command);
    job.key_path = sshd_->client_key().private_key_path;
    job.connect_timeout = std::chrono::seconds(20);  // a loaded CI machine
    return job;
  }
  Recorded Run(const FanoutJob& job) {
    RecordingSink sink;
    LocalFanout fanout(clock_);
    Status s = fanout.Run(job, sink);
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(sink.results.size(), job.hosts.size());
    return static_cast<Recorded&>(sink);
  }
  // How many logins sshd has accepted.
  size_t Logins() const {
    std::string log = sshd_->Log();
    size_t logins = 0;
    for (size_t p = 0; (p = log.find("Accepted publickey", p)) != std::string::npos; ++p) {
      ++logins;
    }
    return logins;
  }
  RealClock clock_;
};

TEST_F(FanoutEngineTest, RunsOnEveryHostAndKeepsStreamsAndExitCodesApart) {
  auto sink = Run(Job({Host("a/w0"), Host("a/w1"), Host("b/w0")},
                      "echo out; echo err >&2; exit 3"));
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(sink.out[i], "out\n");
    EXPECT_EQ(sink.err[i], "err\n");
    EXPECT_EQ(sink.results[i].outcome, HostOutcome::kExited);
    EXPECT_EQ(sink.results[i].exit_code, 3);
    EXPECT_FALSE(sink.results[i].ok());
  }
}

TEST_F(FanoutEngineTest, LargeOutputArrivesWhole) {
  auto sink = Run(Job({Host("w0"), Host("w1")}, "head -c 3000000 /dev/zero | tr '\\0' x"));
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(sink.out[i].size(), 3000000u);
    EXPECT_TRUE(sink.results[i].ok()) << sink.results[i].message;
  }
}

TEST_F(FanoutEngineTest, StdinFileReachesEveryHostIntact) {
  std::string data;
  for (unsigned i = 0; i < 400000; ++i) {
    data += static_cast<char>((i * 7919u) % 251u);
  }
  std::string path = sshd_->dir() + "/payload";
  ASSERT_TRUE(WriteFileAtomic(path, data, 0600).ok());
  auto job = Job({Host("w0"), Host("w1"), Host("w2")}, "sha256sum | cut -d' ' -f1");
  job.stdin_path = path;
  auto sink = Run(job);
  auto local = RunUserCommand({"sha256sum", path}, "", std::chrono::seconds(10));
  ASSERT_TRUE(local.ok());
  std::string want = local->output.substr(0, 64) + "\n";
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(sink.out[i], want);
    EXPECT_TRUE(sink.results[i].ok()) << sink.results[i].message;
  }
}

TEST_F(FanoutEngineTest, TheStdinHeaderComesFirstAndAloneForHostsWithoutInput) {
  std::string path = sshd_->dir() + "/payload";
  ASSERT_TRUE(WriteFileAtomic(path, std::string(300000, 'p'), 0600).ok());
  auto job = Job({Host("w0"), Host("w1")}, "read -r k; echo \"$k\"; wc -c");
  job.stdin_path = path;
  job.stdin_header = "secret\n";
  job.hosts[1].no_input = true;
  auto sink = Run(job);
  EXPECT_EQ(sink.out[0], "secret\n300000\n");
  EXPECT_EQ(sink.out[1], "secret\n0\n");
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(sink.results[i].ok()) << sink.results[i].message;
  }
}

TEST_F(FanoutEngineTest, WithoutInputTheCommandSeesEofAtOnce) {
  auto sink = Run(Job({Host("w0")}, "cat; echo done"));
  EXPECT_EQ(sink.out[0], "done\n");
}

TEST_F(FanoutEngineTest, ChangedHostKeyIsRefusedBeforeLogin) {
  FanoutHost bad = Host("w0");
  // Another ed25519 key: the client key's public half stands in for a stranger's host key.
  std::vector<std::string> words = Split(sshd_->client_key().public_key, ' ');
  bad.host_key = words[0] + " " + words[1];
  auto sink = Run(Job({bad, Host("w1")}, "echo ran"));
  EXPECT_EQ(sink.results[0].outcome, HostOutcome::kHostKeyMismatch);
  EXPECT_NE(sink.results[0].message.find("tpufleet up"), std::string::npos);
  EXPECT_EQ(sink.out[0], "");
  EXPECT_TRUE(sink.results[1].ok());
}

TEST_F(FanoutEngineTest, RefusedKeyIsAuthFailed) {
  FanoutHost h = Host("w0");
  h.user = "no-such-user-tpufleet";
  auto sink = Run(Job({h}, "true"));
  EXPECT_EQ(sink.results[0].outcome, HostOutcome::kAuthFailed) << sink.results[0].message;
}

TEST_F(FanoutEngineTest, ClosedPortIsUnreachableAndSilentPortTimesOut) {
  FanoutHost closed = Host("closed");
  closed.port = ClosedLoopbackPort();
  LoopbackSocket silent(/*listen=*/true);  // accepts into its backlog, never says a word
  FanoutHost hung = Host("hung");
  hung.port = silent.port;
  auto job = Job({closed, hung, Host("ok")}, "echo ok");
  job.connect_timeout = milliseconds(500);
  auto sink = Run(job);
  EXPECT_EQ(sink.results[0].outcome, HostOutcome::kUnreachable);
  EXPECT_NE(sink.results[0].message.find("refused"), std::string::npos)
      << sink.results[0].message;
  EXPECT_EQ(sink.results[1].outcome, HostOutcome::kTimeout);
  EXPECT_EQ(sink.out[2], "ok\n");
}

TEST_F(FanoutEngineTest, CommandTimeoutEndsTheHost) {
  auto job = Job({Host("w0")}, "sleep 30");
  job.command_timeout = milliseconds(300);
  auto sink = Run(job);
  EXPECT_EQ(sink.results[0].outcome, HostOutcome::kTimeout);
}

TEST_F(FanoutEngineTest, FailFastCancelsTheOthers) {
  // Commands that run until their stdin closes, as control's stoppable wrapper does;
  // w0 cannot be reached, which must stop w1 and w2.
  auto job = Job({Host("w0"), Host("w1"), Host("w2")}, "cat >/dev/null");
  job.fail_fast = true;
  job.hold_stdin = true;
  EventLoop loop(clock_);
  FanoutEngine engine(loop);
  RecordingSink sink;
  job.hosts[0].port = ClosedLoopbackPort();
  auto id = engine.Start(job, sink);
  ASSERT_TRUE(id.ok());
  while (!engine.Finished(*id)) {
    loop.RunOnce(milliseconds(200));
  }
  EXPECT_EQ(sink.results[0].outcome, HostOutcome::kUnreachable);
  for (size_t i : {1u, 2u}) {
    EXPECT_EQ(sink.results[i].outcome, HostOutcome::kCancelled);
    EXPECT_NE(sink.results[i].message.find("--fail-fast"), std::string::npos);
  }
}

TEST_F(FanoutEngineTest, ASecondJobReusesTheConnection) {
  EventLoop loop(clock_);
  FanoutEngine engine(loop);
  for (int round = 0; round < 2; ++round) {
    RecordingSink sink;
    auto id = engine.Start(Job({Host("w0")}, "echo " + std::to_string(round)), sink);
    ASSERT_TRUE(id.ok());
    while (!engine.Finished(*id)) {
      loop.RunOnce(milliseconds(200));
    }
    EXPECT_TRUE(sink.results[0].ok()) << sink.results[0].message;
    EXPECT_EQ(engine.open_connections(), 1u);
  }
  EXPECT_EQ(Logins(), 1u) << "one login for both jobs: " << sshd_->Log();
  EXPECT_EQ(engine.CloseIdle(milliseconds(0)), 0u);
}

// A Unix socket that answers each connection with the line it was sent and the name of
// the process that connected ("hello from sshd"), then closes it, as the agent does.
class LineSocket {
 public:
  explicit LineSocket(const std::string& path) : fd_(::socket(AF_UNIX, SOCK_STREAM, 0)) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ::chmod(path.c_str(), 0666);
    EXPECT_EQ(::listen(fd_, 16), 0);
    thread_ = std::thread([this] { Serve(); });
  }
  ~LineSocket() {
    ::shutdown(fd_, SHUT_RDWR);  // wakes accept
    thread_.join();
    ::close(fd_);
  }
  int served() const { return served_; }

 private:
  void Serve() {
    for (int c; (c = ::accept(fd_, nullptr, nullptr)) >= 0; ::close(c)) {
      std::string line;
      char ch = 0;
      while (::read(c, &ch, 1) == 1 && ch != '\n') {
        line.push_back(ch);
      }
      ucred peer{};
      socklen_t len = sizeof peer;
      ::getsockopt(c, SOL_SOCKET, SO_PEERCRED, &peer, &len);
      Result<std::string> comm = ReadFile("/proc/" + std::to_string(peer.pid) + "/comm");
      std::string answer = line + " from " + std::string(Trim(comm.ok() ? *comm : "?")) + "\n";
      EXPECT_EQ(::write(c, answer.data(), answer.size()), static_cast<ssize_t>(answer.size()));
      ++served_;
    }
  }
  int fd_;
  std::atomic<int> served_{0};
  std::thread thread_;
};

// The agent's calls: sshd connects the channel to the socket itself, so no command (no
// shell, no `tpufleet-agent call`) starts on the worker; the socket gets its own input.
TEST_F(FanoutEngineTest, AUnixSocketIsReachedWithoutAProcess) {
  std::string path = sshd_->dir() + "/agent.sock";
  LineSocket agent(path);
  auto job = Job({Host("w0"), Host("w1")}, "echo the command ran");
  job.stdin_header = "the command's input\n";
  job.hold_stdin = true;  // as the agent's calls: the socket closes when it has answered
  for (size_t i = 0; i < 2; ++i) {
    job.hosts[i].unix_socket = path;
    job.hosts[i].socket_input = "hello w" + std::to_string(i) + "\n";
  }
  auto sink = Run(job);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(sink.out[i], "hello w" + std::to_string(i) + " from sshd\n");
    EXPECT_EQ(sink.results[i].outcome, HostOutcome::kExited);
    EXPECT_EQ(sink.results[i].exit_code, 0);
  }
  EXPECT_EQ(agent.served(), 2);
}

// Nobody listening: sshd refuses the channel, the command runs (with the job's input),
// and its exit says why. Asked again on the same connection once the socket is there,
// it is reached: a refusal for that reason is not remembered.
TEST_F(FanoutEngineTest, ASocketNobodyListensOnRunsTheCommandUntilSomeoneDoes) {
  EventLoop loop(clock_);
  FanoutEngine engine(loop);
  std::string path = sshd_->dir() + "/agent.sock";
  auto job = Job({Host("w0")}, "cat; echo the command ran; exit 3");
  job.stdin_header = "the command's input\n";
  job.hosts[0].unix_socket = path;
  job.hosts[0].socket_input = "hello\n";
  auto run = [&] {
    RecordingSink sink;
    auto id = engine.Start(job, sink);
    EXPECT_TRUE(id.ok());
    while (id.ok() && !engine.Finished(*id)) {
      loop.RunOnce(milliseconds(200));
    }
    return static_cast<Recorded>(sink);
  };
  Recorded refused = run();
  EXPECT_EQ(refused.out[0], "the command's input\nthe command ran\n");
  EXPECT_EQ(refused.results[0].exit_code, 3);
  LineSocket agent(path);
  Recorded reached = run();
  EXPECT_EQ(reached.out[0], "hello from sshd\n");
  EXPECT_EQ(reached.results[0].exit_code, 0);
  EXPECT_EQ(agent.served(), 1);
  EXPECT_EQ(Logins(), 1u) << "both on one connection: " << sshd_->Log();
}

// A server that forwards no Unix sockets (AllowStreamLocalForwarding no, as some
// hardened images have): the command runs instead, on every call.
class NoStreamLocalEngine : public FanoutEngineTest {
  std::string ExtraConfig() const override { return "AllowStreamLocalForwarding no\n"; }
};

TEST_F(NoStreamLocalEngine, WhereSshdForwardsNoSocketsTheCommandRuns) {
  std::string path = sshd_->dir() + "/agent.sock";
  LineSocket agent(path);
  auto job = Job({Host("w0"), Host("w1")}, "echo the command ran");
  for (FanoutHost& h : job.hosts) {
    h.unix_socket = path;
    h.socket_input = "hello\n";
  }
  auto sink = Run(job);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(sink.out[i], "the command ran\n");
    EXPECT_TRUE(sink.results[i].ok()) << sink.results[i].message;
  }
  EXPECT_EQ(agent.served(), 0);
}

// up's login check and setup: jobs started on the caller's loop, which goes on while
// they run, the second on the first one's connection.
TEST_F(FanoutEngineTest, Issue11ASessionRunsJobsOnTheCallersLoopOnOneLoginPerHost) {
  EventLoop loop(clock_);
  LocalFanout fanout(clock_);
  std::unique_ptr<FanoutSession> session = fanout.Open(loop);
  int ticks = 0;  // the loop's other work, while the jobs run
  loop.Every(milliseconds(50), [&](Clock::MonoTime) { ++ticks; });
  RecordingSink check, setup;
  int done = 0;
  ASSERT_EQ(session->Start(Job({Host("w0")}, "true"), check,
                           [&] {
                             ++done;
                             ASSERT_EQ(session->Start(Job({Host("w0")}, "sleep 1; echo set"),
                                                      setup, [&] { ++done; }),
                                       Status::Ok());
                           }),
            Status::Ok());
  EXPECT_EQ(done, 0) << "Start returns before the job ends";
  ASSERT_EQ(loop.RunUntil([&] { return done == 2; }), Status::Ok());

  EXPECT_TRUE(check.results[0].ok()) << check.results[0].message;
  EXPECT_TRUE(setup.results[0].ok()) << setup.results[0].message;
  EXPECT_EQ(setup.out[0], "set\n");
  EXPECT_GE(ticks, 10) << "the loop went on while the setup ran";
  EXPECT_EQ(Logins(), 1u) << "one handshake for both jobs: " << sshd_->Log();
}

TEST_F(FanoutEngineTest, MissingKeyIsAnErrorBeforeAnyConnection) {
  EventLoop loop(clock_);
  FanoutEngine engine(loop);
  RecordingSink sink;
  auto job = Job({Host("w0")}, "true");
  job.key_path = sshd_->dir() + "/no-such-key";
  EXPECT_FALSE(engine.Start(job, sink).ok());
  EXPECT_EQ(engine.open_connections(), 0u);
}

// Issue 11: one host tpufleet has no key for (an ssh-hosts node, say) failed the whole
// `exec all`; and a wrong host key said neither which key was expected nor which came.
using Issue11Engine = FanoutEngineTest;

TEST_F(Issue11Engine, AHostWithoutAPinnedKeyFailsAloneAndIsNeverConnectedTo) {
  FanoutHost unpinned = Host("box");
  unpinned.host_key = "";
  FanoutHost malformed = Host("odd");
  malformed.host_key = "ssh-ed25519";
  auto sink = Run(Job({Host("w0"), unpinned, malformed, Host("w1")}, "echo ran"));
  EXPECT_TRUE(sink.results[0].ok()) << sink.results[0].message;
  EXPECT_TRUE(sink.results[3].ok()) << sink.results[3].message;
  EXPECT_EQ(sink.out[0], "ran\n");
  EXPECT_EQ(sink.out[3], "ran\n");
  for (size_t i : {1u, 2u}) {
    EXPECT_EQ(sink.results[i].outcome, HostOutcome::kHostKeyMismatch);
    EXPECT_EQ(sink.out[i], "");
  }
  EXPECT_NE(sink.results[1].message.find("no host key pinned for 127.0.0.1"), std::string::npos)
      << sink.results[1].message;
}

TEST_F(Issue11Engine, AWrongHostKeyNamesBothFingerprintsAndIsNotRetried) {
  FanoutHost bad = Host("w0");
  std::vector<std::string> words = Split(sshd_->client_key().public_key, ' ');
  bad.host_key = words[0] + " " + words[1];
  EventLoop loop(clock_);
  FanoutEngine engine(loop);
  RecordingSink sink;
  // Twice on one engine: the second job must not take a kept connection or retry.
  for (int round = 0; round < 2; ++round) {
    sink.results.clear();
    auto id = engine.Start(Job({bad, Host("w1")}, "echo ran"), sink);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    while (!engine.Finished(*id)) {
      loop.RunOnce(milliseconds(200));
    }
    const std::string& msg = sink.results[0].message;
    EXPECT_EQ(sink.results[0].outcome, HostOutcome::kHostKeyMismatch);
    EXPECT_NE(msg.find("expected " + SshKeyLineFingerprint(bad.host_key)), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("offered " + SshKeyLineFingerprint(sshd_->host_key())), std::string::npos)
        << msg;
    EXPECT_EQ(SshKeyLineFingerprint(sshd_->host_key()).rfind("SHA256:", 0), 0u);
    EXPECT_TRUE(sink.results[1].ok()) << sink.results[1].message;
  }
}

// Issue 5: a kept-open connection (the holder's) to a worker that stopped answering (its
// sshd frozen, or its network cut without a reset) left exec waiting for a channel with
// no deadline; --connect-timeout now bounds the channel and the exec too, and the host is
// retried once on a fresh connection.
using Issue5 = FanoutEngineTest;

// The children of `parent`, from /proc.
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    Result<std::string> stat = ReadFile(entry.path().string() + "/stat");
    if (!stat.ok() || stat->rfind(')') == std::string::npos) {
      continue;
    }
    // "pid (comm) S ppid ...": comm may hold spaces, so read after the last ')'.
    int ppid = 0;
    char state = 0;
    if (std::sscanf(stat->c_str() + stat->rfind(')') + 1, " %c %d", &state, &ppid) == 2 &&
        ppid == parent) {
      out.push_back(std::atoi(entry.path().filename().c_str()));
    }
  }
  return out;
}

// Its children, theirs, and so on.
std::vector<pid_t> DescendantsOf(pid_t parent) {
  std::vector<pid_t> out = ChildrenOf(parent);
  for (size_t i = 0; i < out.size(); ++i) {
    for (pid_t grandchild : ChildrenOf(out[i])) {
      out.push_back(grandchild);
    }
  }
  return out;
}

TEST_F(Issue5, AKeptConnectionThatStopsAnsweringIsRetriedOnAFreshOne) {
  EventLoop loop(clock_);
  FanoutEngine engine(loop);
  auto run = [&](const FanoutJob& job, RecordingSink& sink) {
    auto id = engine.Start(job, sink);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!engine.Finished(*id) && std::chrono::steady_clock::now() < give_up) {
      loop.RunOnce(milliseconds(200));
    }
    EXPECT_TRUE(engine.Finished(*id)) << "the job still waits after 30 s";
    engine.Cancel(*id);
  };
  RecordingSink first;
  run(Job({Host("w0")}, "echo 1"), first);
  ASSERT_TRUE(first.results[0].ok()) << first.results[0].message;
  ASSERT_EQ(engine.open_connections(), 1u);

  // Freeze the sshd processes serving that connection (the kernel still acknowledges
  // what the engine sends, so TCP never reports anything); the listener still accepts.
  // TestSshd's sshd is this process's only child; its own children serve connections.
  std::vector<pid_t> sshd = ChildrenOf(::getpid());
  ASSERT_EQ(sshd.size(), 1u);
  std::vector<pid_t> sessions = DescendantsOf(sshd[0]);
  ASSERT_FALSE(sessions.empty()) << "found no sshd session to freeze";
  for (pid_t p : sessions) {
    ::kill(p, SIGSTOP);
  }

  auto job = Job({Host("w0")}, "echo 2");
  job.connect_timeout = std::chrono::seconds(1);
  RecordingSink second;
  auto start = std::chrono::steady_clock::now();
  run(job, second);
  auto took = std::chrono::steady_clock::now() - start;
  for (pid_t p : sessions) {
    ::kill(p, SIGCONT);
  }

  ASSERT_EQ(second.results.count(0), 1u);
  EXPECT_TRUE(second.results[0].ok())
      << HostOutcomeName(second.results[0].outcome) << ": " << second.results[0].message;
  EXPECT_EQ(second.out[0], "2\n");
  EXPECT_GE(took, std::chrono::seconds(1));
  EXPECT_LT(took, std::chrono::seconds(10));
}

// The engine's thread loses the CPU between two libssh2 calls of one pass (a loaded
// machine): what the worker sends meanwhile is taken from the socket by the later call,
// into libssh2's buffers, where poll cannot see it. This sink makes that gap
// deterministic. It counts the engine's Backlogged() calls from the command's first
// stderr output: it says yes to the three that hold the host back (the stderr loop's,
// the check after the reads, the next pass's), and no from then on, while the host
// resumes: the engine's BeforePoll asks (4), its timer (5), DriveTask before writing
// (6), after it and before the stdout reads (7), and before the stderr read (8). On call
// `stall_on` it sleeps.
class StallingSink : public RecordingSink {
 public:
  /// Calls that hold the host back, as above.
  static constexpr int kBehindCalls = 3;
  /// How long the stall lasts: well past what the worker sends after its sleep.
  static constexpr milliseconds kStall{1500};
  /// The call after the resumed host's write, before its stdout reads.
  static constexpr int kAfterTheWrite = 7;
  /// The call between its stdout reads and its stderr read.
  static constexpr int kBetweenTheReads = 8;

  explicit StallingSink(int stall_on) : stall_on_(stall_on) {}
  void OnOutput(size_t host, OutputStream stream, std::string_view data) override {
    RecordingSink::OnOutput(host, stream, data);
    if (stream == OutputStream::kStderr) {
      counting_ = true;
    }
  }
  bool Backlogged() override {
    if (!counting_) {
      return false;
    }
    ++calls_;
    if (calls_ <= kBehindCalls) {
      return true;
    }
    if (calls_ == stall_on_) {
      std::this_thread::sleep_for(kStall);
    }
    return false;
  }

 private:
  int stall_on_;
  bool counting_ = false;
  int calls_ = 0;
};

// Runs `job` (one host) in this process with a StallingSink stalling on call `stall_on`;
// the host's stdout, once the test checked that it exited 0.
std::string StalledRunOutput(const FanoutJob& job, int stall_on) {
  RealClock clock;
  StallingSink sink(stall_on);
  LocalFanout fanout(clock);
  EXPECT_TRUE(fanout.Run(job, sink).ok());
  EXPECT_EQ(sink.results.count(0), 1u);
  EXPECT_TRUE(sink.results[0].ok())
      << HostOutcomeName(sink.results[0].outcome) << ": " << sink.results[0].message;
  return sink.out[0];
}

// A job of one host on `server`, with a command timeout that ends a hang.
FanoutJob OneHostJob(const TestSshd& server, std::string command) {
  FanoutJob job;
  job.hosts.resize(1);
  job.hosts[0].name = "w0";
  job.hosts[0].address = "127.0.0.1";
  job.hosts[0].port = server.port();
  job.hosts[0].user = server.user();
  job.hosts[0].host_key = server.host_key();
  job.command = std::move(command);
  job.key_path = server.client_key().private_key_path;
  job.connect_timeout = std::chrono::seconds(20);  // a loaded CI machine
  job.command_timeout = std::chrono::seconds(30);  // without the mend it hangs
  return job;
}

// The upload of check 12 of copy_e2e_test.sh that hung: its write found the worker's
// window full, and the window adjustment then arrived while the engine was between that
// write and its reads, which took it in; poll waited for the socket, which had nothing.
// The upload of check 12 of copy_e2e_test.sh that hung on a loaded machine: its write
// found the worker's window full, and the window adjustment then arrived while the engine
// was between that write and its reads, which took it in; poll then waited for a socket
// that had nothing more to say. (TEST, not TEST_F: the suite Issue10 has plain TESTs.)
TEST(Issue10, AWindowAdjustmentTakenInByAReadStillResumesTheUpload) {
  if (!TestSshd::Installed()) {
    GTEST_SKIP() << TestSshd::kSkipReason;
  }
  auto sshd = TestSshd::Start();
  ASSERT_TRUE(sshd.ok()) << sshd.status().ToString();
  TestSshd& server = **sshd;
  // Twice the worker's 2 MiB window: the first half fills it while the command sleeps.
  std::string data(4u << 20, 'x');
  std::string path = server.dir() + "/payload";
  ASSERT_TRUE(WriteFileAtomic(path, data, 0600).ok());
  // The stderr line comes once the window is full; the command reads (and sshd sends
  // its window adjustment) during the sink's stall.
  FanoutJob job = OneHostJob(server, "sleep 1; echo held >&2; sleep 1; exec wc -c");
  job.stdin_path = path;
  EXPECT_EQ(StalledRunOutput(job, StallingSink::kAfterTheWrite),
            std::to_string(data.size()) + "\n");
}

// The download that hung (`cp cp-2:/tmp/big.bin ./logs`): the end of the command's
// output came after the stdout reads, the stderr read took it in with the channel's EOF
// and close, and the worker had nothing more to send.
TEST(Issue10, StdoutTakenInByTheStderrReadStillReachesTheSink) {
  if (!TestSshd::Installed()) {
    GTEST_SKIP() << TestSshd::kSkipReason;
  }
  auto sshd = TestSshd::Start();
  ASSERT_TRUE(sshd.ok()) << sshd.status().ToString();
  FanoutJob job = OneHostJob(**sshd, "echo held >&2; sleep 1; echo the-end");
  EXPECT_EQ(StalledRunOutput(job, StallingSink::kBetweenTheReads), "the-end\n");
}

// A worker whose command takes none of its input (its sshd starved or frozen: the kernel
// still acknowledges, so TCP reports nothing) ends as a timeout once input_stall_timeout
// passes, where cp set no command timeout and waited forever.
TEST(Issue10, AWorkerThatTakesNoInputTimesOut) {
  if (!TestSshd::Installed()) {
    GTEST_SKIP() << TestSshd::kSkipReason;
  }
  auto sshd = TestSshd::Start();
  ASSERT_TRUE(sshd.ok()) << sshd.status().ToString();
  std::string path = (*sshd)->dir() + "/payload";
  ASSERT_TRUE(WriteFileAtomic(path, std::string(8u << 20, 'x'), 0600).ok());
  FanoutJob job = OneHostJob(**sshd, "exec sleep 5");  // ends by itself after the test
  job.stdin_path = path;
  job.command_timeout = std::chrono::seconds(0);  // as cp runs it
  job.input_stall_timeout = std::chrono::seconds(1);
  RealClock clock;
  RecordingSink sink;
  LocalFanout fanout(clock);
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(fanout.Run(job, sink).ok());
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(sink.results.count(0), 1u);
  EXPECT_EQ(sink.results[0].outcome, HostOutcome::kTimeout) << sink.results[0].message;
  EXPECT_NE(sink.results[0].message.find("took none of its input for 1s"), std::string::npos)
      << sink.results[0].message;
  EXPECT_LT(took, std::chrono::seconds(5)) << "it waited for the command to end";
}

// The engine's deadlines are timers of the loop it runs on, read against the loop's
// clock: with a FakeClock, a server that never greets times out when the test moves
// time ten seconds on, and not a moment before; nothing really waits.
TEST(FanoutEngineLoop, DeadlinesAreTimersOnTheLoopsClock) {
  TempDir tmp;
  std::string key = tmp.path() + "/id_ed25519";
  ASSERT_TRUE(WriteFileAtomic(key, "never used: no server gets this far", 0600).ok());
  ASSERT_TRUE(WriteFileAtomic(key + ".pub", "ssh-ed25519 AAAA", 0600).ok());
  LoopbackSocket silent(/*listen=*/true);  // accepts into its backlog, never says a word
  ASSERT_NE(silent.port, 0);
  FanoutJob job;
  job.hosts.resize(1);
  job.hosts[0].name = "hung";
  job.hosts[0].address = "127.0.0.1";
  job.hosts[0].port = silent.port;
  job.hosts[0].user = "me";
  job.hosts[0].host_key =
      "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGw6SazH8E4wAHaauG7OB3VjXkbuu9GiwOP564ZWS2Ju";
  job.command = "true";
  job.key_path = key;
  job.connect_timeout = std::chrono::seconds(10);

  FakeClock clock;
  EventLoop loop(clock);
  FanoutEngine engine(loop);
  RecordingSink sink;
  auto id = engine.Start(job, sink);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  for (int i = 0; i < 20; ++i) {  // the TCP connect completes; the banner never comes
    loop.RunOnce(milliseconds(0));
  }
  clock.Advance(std::chrono::seconds(9));
  loop.RunOnce(milliseconds(0));
  EXPECT_FALSE(engine.Finished(*id));
  clock.Advance(std::chrono::seconds(1));
  loop.RunOnce(milliseconds(0));
  ASSERT_TRUE(engine.Finished(*id));
  EXPECT_EQ(sink.results[0].outcome, HostOutcome::kTimeout);
  EXPECT_EQ(sink.results[0].message, "no SSH login within 10s");
}

// What control's RunResolving may run again at a new address: a host whose connect or
// login failed (the command never started there), never one whose command ran.
TEST_F(FanoutEngineTest, Issue11NeverConnectedIsTheConnectFailuresOnly) {
  FanoutHost closed = Host("closed");
  closed.port = ClosedLoopbackPort();
  LoopbackSocket silent(/*listen=*/true);
  FanoutHost hung = Host("hung");
  hung.port = silent.port;
  auto job = Job({closed, hung, Host("ok")}, "sleep 30");
  job.connect_timeout = milliseconds(500);
  job.command_timeout = milliseconds(1500);
  auto sink = Run(job);
  EXPECT_TRUE(NeverConnected(sink.results[0])) << sink.results[0].message;
  EXPECT_TRUE(NeverConnected(sink.results[1])) << sink.results[1].message;
  EXPECT_EQ(sink.results[2].outcome, HostOutcome::kTimeout);
  EXPECT_FALSE(NeverConnected(sink.results[2])) << "its command ran: " << sink.results[2].message;
}

}  // namespace
}  // namespace tpufleet
