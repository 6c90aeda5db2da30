// The connection holder, served on a thread of the test against a real sshd: jobs run
// through it, a second job reuses the first one's login, status and stop answer, a
// client that goes away cancels its job, and without a holder the job runs here.
#include "ssh/holder.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "ssh/fanout_engine.h"
#include "ssh/testing/temp_dir.h"
#include "ssh/testing/test_sshd.h"
#include "util/testing/as_nobody.h"

namespace tpufleet {
namespace {

class Collect : public FanoutSink {
 public:
  void OnOutput(size_t host, OutputStream, std::string_view data) override {
    out[host] += std::string(data);
  }
  void OnResult(size_t host, const HostResult& r) override { results[host] = r; }
  bool Cancelled() override { return cancel_after_output && !out.empty(); }
  std::map<size_t, std::string> out;
  std::map<size_t, HostResult> results;
  bool cancel_after_output = false;
};

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) {
    ++n;
  }
  return n;
}

class HolderTest : public TestSshdFixture {
 protected:
  void SetUp() override {
    TestSshdFixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) {
      return;
    }
    socket_ = sshd_->dir() + "/holder.sock";
  }
  void TearDown() override {
    if (server_.joinable()) {
      (void)StopHolder(socket_);
      server_.join();
    }
  }
  // Starts the holder on a thread, as `tpufleet holder serve` would in its own process.
  Status StartHolder() {
    if (!server_.joinable()) {
      server_ = std::thread([this] { served_ = ServeHolder(socket_, clock_); });
    }
    return Status::Ok();
  }
  FanoutJob Job(const std::string& command, size_t hosts = 2) {
    FanoutJob job;
    for (size_t i = 0; i < hosts; ++i) {
      FanoutHost h;
      h.name = "w" + std::to_string(i);
      h.address = "127.0.0.1";
      h.port = sshd_->port();
      h.user = sshd_->user();
      h.host_key = sshd_->host_key();
      job.hosts.push_back(h);
    }
    job.command = command;
    job.key_path = sshd_->client_key().private_key_path;
    job.connect_timeout = std::chrono::seconds(20);
    return job;
  }

  RealClock clock_;
  std::string socket_;
  std::thread server_;
  Status served_;
};

TEST_F(HolderTest, JobsRunThroughTheHolderAndTheSecondReusesTheLogins) {
  HolderFanout fanout(socket_, [this] { return StartHolder(); }, clock_);
  for (int round = 0; round < 2; ++round) {
    Collect sink;
    ASSERT_TRUE(fanout.Run(Job("echo hi; exit 2"), sink).ok());
    ASSERT_EQ(sink.results.size(), 2u);
    for (size_t h = 0; h < 2; ++h) {
      EXPECT_EQ(sink.out[h], "hi\n");
      EXPECT_EQ(sink.results[h].outcome, HostOutcome::kExited);
      EXPECT_EQ(sink.results[h].exit_code, 2);
    }
  }
  // Two hosts, two rounds, two logins: the second round found them warm.
  EXPECT_EQ(Count(sshd_->Log(), "Accepted publickey"), 2u) << sshd_->Log();
  Result<std::string> status = HolderStatus(socket_);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_NE(status->find("\"connections\":2"), std::string::npos) << *status;
}

TEST_F(HolderTest, StopEndsTheHolderAndRemovesItsSocket) {
  ASSERT_TRUE(StartHolder().ok());
  Status answered = UnavailableError("never answered");
  for (int i = 0; i < 300 && !answered.ok(); ++i) {  // its thread may still be starting
    answered = HolderStatus(socket_).status();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(answered.ok()) << answered.ToString();
  ASSERT_TRUE(StopHolder(socket_).ok());
  server_.join();
  EXPECT_TRUE(served_.ok()) << served_.ToString();
  EXPECT_NE(::access(socket_.c_str(), F_OK), 0);
  EXPECT_EQ(HolderStatus(socket_).status().code(), StatusCode::kUnavailable);
}

TEST_F(HolderTest, AClientThatGoesAwayCancelsItsJob) {
  HolderFanout fanout(socket_, [this] { return StartHolder(); }, clock_);
  Collect sink;
  sink.cancel_after_output = true;
  auto job = Job("echo started; cat >/dev/null", 1);
  job.hold_stdin = true;  // runs until its connection closes
  ASSERT_TRUE(fanout.Run(job, sink).ok());
  EXPECT_EQ(sink.results[0].outcome, HostOutcome::kCancelled);
  // The holder dropped that connection: nothing of the job stays open.
  Result<std::string> status = UnavailableError("not asked yet");
  for (int i = 0; i < 300; ++i) {
    status = HolderStatus(socket_);
    if (status.ok() && status->find("\"connections\":0") != std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(status.ok());
  EXPECT_NE(status->find("\"connections\":0"), std::string::npos) << *status;
}

// cp's bound on a worker that takes none of its input (fanout_engine_test's
// AWorkerThatTakesNoInputTimesOut) crosses to the holder with the job.
TEST_F(HolderTest, Issue10TheInputStallBoundReachesTheHolder) {
  HolderFanout fanout(socket_, [this] { return StartHolder(); }, clock_);
  std::string path = sshd_->dir() + "/payload";
  ASSERT_TRUE(WriteFileAtomic(path, std::string(8u << 20, 'x'), 0600).ok());
  auto job = Job("exec sleep 5", 1);  // ends by itself after the test
  job.stdin_path = path;
  job.input_stall_timeout = std::chrono::seconds(1);
  Collect sink;
  ASSERT_TRUE(fanout.Run(job, sink).ok());
  EXPECT_EQ(sink.results[0].outcome, HostOutcome::kTimeout) << sink.results[0].message;
}

TEST_F(HolderTest, WithoutAHolderTheJobRunsInThisProcess) {
  HolderFanout fanout(socket_, [] { return UnavailableError("cannot start"); }, clock_);
  Collect sink;
  ASSERT_TRUE(fanout.Run(Job("echo local", 1), sink).ok());
  EXPECT_EQ(sink.out[0], "local\n");
  EXPECT_TRUE(sink.results[0].ok());
}

TEST_F(HolderTest, AJobTheEngineRefusesIsAnError) {
  HolderFanout fanout(socket_, [this] { return StartHolder(); }, clock_);
  Collect sink;
  auto job = Job("true", 1);
  job.hosts[0].user = "";  // (a host without a pinned key fails alone since issue 11)
  Status s = fanout.Run(job, sink);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
}

// Issue 10, finding 7: a worker printing 1.5 GB to a client that could not keep up
// grew the holder to 1.1 GB. Now the holder stops reading the job's channels while its
// client is behind: what it holds stays under the bound, and nothing is lost.
class StalledSink : public FanoutSink {
 public:
  void OnOutput(size_t, OutputStream, std::string_view data) override {
    if (bytes == 0) {
      // A client that does not read for a while (a terminal scrolled back, a pipe to a
      // slow program): the worker meanwhile prints as fast as it can.
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    }
    bytes += data.size();
    nonzero = nonzero || data.find_first_not_of('\0') != std::string_view::npos;
  }
  void OnResult(size_t, const HostResult& r) override { result = r; }
  size_t bytes = 0;
  bool nonzero = false;
  HostResult result;
};

TEST_F(HolderTest, Issue10ASlowClientHoldsItsJobAndTheHolderKeepsLittle) {
  HolderFanout fanout(socket_, [this] { return StartHolder(); }, clock_);
  constexpr size_t kTotal = 48u << 20;  // far beyond the bound, quick over loopback
  StalledSink sink;
  ASSERT_TRUE(fanout.Run(Job("head -c " + std::to_string(kTotal) + " /dev/zero", 1), sink).ok());
  EXPECT_TRUE(sink.result.ok()) << sink.result.message;
  EXPECT_EQ(sink.bytes, kTotal);  // held, not dropped
  EXPECT_FALSE(sink.nonzero);
  Result<std::string> status = HolderStatus(socket_);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  auto peak = nlohmann::json::parse(*status).at("peak_backlog_bytes").get<size_t>();
  // The bound, one more read that was under way, and the frames' headers and result.
  EXPECT_LE(peak, kHolderClientBacklogBytes + kFanoutIoChunk + 4096) << *status;
  EXPECT_GE(peak, kHolderClientBacklogBytes) << "the client was never behind: " << *status;
}

// ---- Issue 10: a holder that is not ours ----

// A forged holder, as the review ran it: a process of nobody's listening at `path`
// that greets like a holder and waits for the request (the key path, the hosts, the
// command). Its exit code, from Received(): 1 when any request byte reached it.
class ForgedHolder {
 public:
  // `bound_fd` >= 0: a socket root bound at `path`, on which nobody calls listen() (the
  // path passes every ownership check; only the peer's uid gives it away). Else
  // nobody binds `path` itself.
  ForgedHolder(const std::string& path, int bound_fd) {
    if (::pipe(ready_) != 0 || ::pipe(done_) != 0) {
      return;
    }
    thread_ = std::thread([this, path, bound_fd] {
      exit_ = RunAsNobody([&] { return Serve(path, bound_fd); });
    });
    pollfd p{ready_[0], POLLIN, 0};
    char c;
    listening_ = ::poll(&p, 1, 10000) == 1 && ::read(ready_[0], &c, 1) == 1 && c == 'y';
  }
  ~ForgedHolder() { (void)Received(); }
  bool listening() const { return listening_; }
  // Ends the forged holder and says whether the client's request reached it.
  bool Received() {
    if (thread_.joinable()) {
      (void)!::write(done_[1], "x", 1);
      thread_.join();
      for (int fd : {ready_[0], ready_[1], done_[0], done_[1]}) {
        ::close(fd);
      }
    }
    return exit_ == 1;
  }

 private:
  // In the child, as nobody: system calls only.
  int Serve(const std::string& path, int bound_fd) {
    int fd = bound_fd;
    if (fd < 0) {
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
      fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
      if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        (void)!::write(ready_[1], "n", 1);
        return 2;
      }
    }
    if (::listen(fd, 4) != 0) {
      (void)!::write(ready_[1], "n", 1);
      return 2;
    }
    (void)!::write(ready_[1], "y", 1);
    pollfd wait[2] = {{fd, POLLIN, 0}, {done_[0], POLLIN, 0}};
    if (::poll(wait, 2, 10000) <= 0 || (wait[0].revents & POLLIN) == 0) {
      return 0;  // no client came
    }
    int client = ::accept(fd, nullptr, nullptr);
    constexpr char kGreeting[] = "TPUFLEET-HOLDER 1\n";
    (void)!::write(client, kGreeting, sizeof kGreeting - 1);
    pollfd in{client, POLLIN, 0};
    char buf[256];
    return ::poll(&in, 1, 2000) == 1 && ::read(client, buf, sizeof buf) > 0 ? 1 : 0;
  }

  int ready_[2] = {-1, -1};
  int done_[2] = {-1, -1};
  std::thread thread_;
  bool listening_ = false;
  int exit_ = -1;
};

FanoutJob SecretJob() {
  FanoutJob job;
  FanoutHost h;
  h.name = "w0";
  h.address = "127.0.0.1";
  h.port = 1;
  h.user = "me";
  h.host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGw6SazH8E4wAHaauG7OB3VjXkbuu9GiwOP564ZWS2Ju";
  job.hosts.push_back(h);
  job.command = "echo secret";
  job.key_path = "/root/.local/state/tpufleet/ssh/id_ed25519";
  return job;
}

TEST(Issue10, AHolderListenerOfAnotherUserIsRefusedBeforeTheJobIsSent) {
  if (auto why = NobodySkipReason()) {
    GTEST_SKIP() << *why;
  }
  TempDir tmp;  // ours, 0700: the path passes; the listener is nobody's
  std::string path = tmp.path() + "/holder.sock";
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ForgedHolder forged(path, fd);
  ::close(fd);
  ASSERT_TRUE(forged.listening());

  RealClock clock;
  bool started = false;
  HolderFanout fanout(path, [&] { started = true; return Status::Ok(); }, clock);
  Collect sink;
  Status s = fanout.Run(SecretJob(), sink);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << s.ToString();
  EXPECT_NE(s.message().find("refusing the connection holder at " + path + ": it runs as nobody"),
            std::string::npos)
      << s.message();
  EXPECT_FALSE(forged.Received()) << "the job reached a holder of nobody's";
  EXPECT_FALSE(started);
  EXPECT_TRUE(sink.results.empty());  // the job was not run some other way either
}

TEST(Issue10, AHolderSocketInADirectoryOfAnotherUserIsRefused) {
  if (auto why = NobodySkipReason()) {
    GTEST_SKIP() << *why;
  }
  // nobody pre-created the state dir (in a shared, sticky dir) and listens in it.
  TempDir tmp;
  ASSERT_EQ(::chmod(tmp.path().c_str(), 01777), 0);
  std::string dir = tmp.path() + "/state";
  ASSERT_EQ(RunAsNobody([&] { return ::mkdir(dir.c_str(), 0755) == 0 ? 0 : 1; }), 0);
  std::string path = dir + "/holder.sock";
  ForgedHolder forged(path, -1);
  ASSERT_TRUE(forged.listening());

  RealClock clock;
  HolderFanout fanout(path, [] { return Status::Ok(); }, clock);
  Collect sink;
  Status s = fanout.Run(SecretJob(), sink);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << s.ToString();
  EXPECT_NE(s.message().find(dir + " belongs to nobody"), std::string::npos) << s.message();
  EXPECT_FALSE(forged.Received()) << "the job reached a holder of nobody's";
  EXPECT_EQ(StopHolder(path).code(), StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace tpufleet
