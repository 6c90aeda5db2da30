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
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ssh/fanout_engine.h"
#include "ssh/testing/nobody_dir.h"
#include "ssh/testing/temp_dir.h"
#include "ssh/testing/test_sshd.h"
#include "util/file.h"
#include "util/testing/as_nobody.h"
#include "util/testing/fake_clock.h"

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
  void SetUpWithSshd() override { socket_ = sshd_->dir() + "/holder.sock"; }
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
  const char* key =
      "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGw6SazH8E4wAHaauG7OB3VjXkbuu9GiwOP564ZWS2Ju";
  job.hosts.push_back({.name = "w0",
                       .address = "127.0.0.1",
                       .port = 1,
                       .user = "me",
                       .host_key = key,
                       .command = "",
                       .no_input = false,
                       .unix_socket = "",
                       .socket_input = ""});
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
  std::string dir = NobodysDir(tmp, "state", 0755);
  ASSERT_FALSE(dir.empty());
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

// ---- Issue 11: a malformed request ----

// A client of the holder's own user that sends `request` (the u32 length is computed
// unless `length` says otherwise) and reads until the holder closes the socket. Returns
// the frames after the greeting as (type, payload), or an empty list when the holder
// never answered (it died).
std::vector<std::pair<int, std::string>> RawRequest(const std::string& path,
                                                    const std::string& request,
                                                    std::optional<uint32_t> length = {}) {
  std::vector<std::pair<int, std::string>> frames;
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return frames;
  }
  uint32_t n = length.value_or(static_cast<uint32_t>(request.size()));
  std::string bytes = {static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                       static_cast<char>(n >> 8), static_cast<char>(n)};
  bytes += request;
  (void)!::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  std::string in;
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10000) != 1) {
      break;  // the holder neither answered nor closed: a hang
    }
    ssize_t got = ::read(fd, buf, sizeof buf);
    if (got <= 0) {
      break;
    }
    in.append(buf, static_cast<size_t>(got));
  }
  ::close(fd);
  size_t pos = in.find('\n');
  if (pos == std::string::npos) {
    return frames;
  }
  for (++pos; in.size() - pos >= 9;) {
    auto u32 = [&](size_t at) {
      uint32_t v = 0;
      for (int i = 0; i < 4; ++i) {
        v = (v << 8) | static_cast<unsigned char>(in[at + i]);
      }
      return v;
    };
    uint32_t len = u32(pos + 5);
    if (in.size() - pos - 9 < len) {
      break;
    }
    frames.emplace_back(static_cast<unsigned char>(in[pos]), in.substr(pos + 9, len));
    pos += 9 + len;
  }
  return frames;
}

// A holder served on a thread of the test, stopped and joined however the test ends.
class ServedHolder {
 public:
  // Serves on a socket in a temporary directory of its own, on `clock`.
  explicit ServedHolder(Clock& clock) : path_(tmp_.path() + "/holder.sock") {
    thread_ = std::thread([this, &clock] { served_ = ServeHolder(path_, clock); });
    Status answered = UnavailableError("never answered");
    for (int i = 0; i < 300 && !answered.ok(); ++i) {  // its thread may still be starting
      answered = HolderStatus(path_).status();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    answering_ = answered.ok();
  }
  ~ServedHolder() { (void)Stop(); }
  bool answering() const { return answering_; }
  const std::string& path() const { return path_; }
  // Stops it; its ServeHolder's status.
  Status Stop() {
    if (thread_.joinable()) {
      (void)StopHolder(path_);
      thread_.join();
    }
    return served_;
  }

 private:
  TempDir tmp_;
  const std::string path_;
  std::thread thread_;
  Status served_;
  bool answering_ = false;
};

// A holder crashed (an uncaught nlohmann::json::type_error) on a request whose "op" was
// not a string, and would have on a job field of the wrong type or a number too large
// for its field: every client's jobs died with it. Now each such request is answered
// with one error frame (InvalidArgument, saying what is wrong) and its socket closed,
// and the holder goes on serving.
TEST(Issue11, AMalformedHolderRequestIsAnsweredWithAnErrorAndTheHolderLives) {
  RealClock clock;
  ServedHolder holder(clock);
  ASSERT_TRUE(holder.answering());
  const std::string& path = holder.path();

  const std::string host =
      R"({"name":"w0","address":"127.0.0.1","port":22,"user":"me","host_key":"ssh-ed25519 AAAA",)"
      R"("command":"","no_input":false})";
  auto job = [&](const std::string& hosts, const std::string& timeout) {
    return R"({"op":"run","job":{"hosts":)" + hosts +
           R"(,"command":"true","key_path":"/nonexistent","stdin_path":"","stdin_header":"",)"
           R"("max_parallel":1,"connect_timeout_ms":)" + timeout +
           R"(,"command_timeout_ms":0,"fail_fast":false,"hold_stdin":false}})";
  };
  std::string port_string = host;
  port_string.replace(port_string.find("22"), 2, "\"22\"");
  std::string port_huge = host;
  port_huge.replace(port_huge.find("22"), 2, "1e300");
  std::string port_zero = host;
  port_zero.replace(port_zero.find("22"), 2, "0");
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"op":1})", "\"op\""},
      {R"({"op":null})", "\"op\""},
      {R"({"op":["run"]})", "\"op\""},
      {R"([1,2,3])", "JSON object"},
      {"not json", "JSON"},
      {std::string(100000, '['), "JSON"},
      {R"({"op":"run"})", "\"job\""},
      {R"({"op":"run","job":[]})", "\"job\""},
      {R"({"op":"dance"})", "dance"},
      {job(R"("w0")", "1000"), "hosts"},
      {job("[" + port_string + "]", "1000"), "port"},
      {job("[" + port_huge + "]", "1000"), "port"},
      {job("[" + port_zero + "]", "1000"), "port"},
      {job("[" + host + "]", R"("soon")"), "connect_timeout_ms"},
      {job("[" + host + "]", "1e300"), "connect_timeout_ms"},
      {job("[" + host + "]", "-5"), "connect_timeout_ms"},
      {job("[" + host + "]", "9223372036854775807"), "connect_timeout_ms"},
  };
  for (const auto& [request, names] : bad) {
    auto frames = RawRequest(path, request);
    ASSERT_EQ(frames.size(), 1u) << "no single answer to " << request.substr(0, 80);
    EXPECT_EQ(frames[0].first, 5) << "not an error frame";
    auto e = nlohmann::json::parse(frames[0].second, nullptr, false);
    ASSERT_TRUE(e.is_object()) << frames[0].second;
    EXPECT_EQ(e["code"], static_cast<int>(StatusCode::kInvalidArgument)) << frames[0].second;
    EXPECT_NE(e["message"].get<std::string>().find(names), std::string::npos)
        << request.substr(0, 80) << " -> " << frames[0].second;
  }
  // A length beyond the bound is refused before anything is read.
  auto frames = RawRequest(path, "{}", 0xffffffffu);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_NE(frames[0].second.find("too large"), std::string::npos) << frames[0].second;

  Result<std::string> status = HolderStatus(path);  // still there
  EXPECT_TRUE(status.ok()) << status.status().ToString();
  Status served = holder.Stop();
  EXPECT_TRUE(served.ok()) << served.ToString();
}

// A client that sent half a request (or none) and then nothing held its socket, and kept
// the holder from ever ending as idle. Now it is told after kHolderRequestTimeout, on
// the holder's clock, and its socket closed.
TEST(Issue11, AClientThatNeverFinishesItsRequestIsToldAndLetGo) {
  FakeClock clock;
  ServedHolder holder(clock);
  ASSERT_TRUE(holder.answering());
  const std::string& path = holder.path();
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    clock.Advance(kHolderRequestTimeout);
  });
  auto frames = RawRequest(path, R"({"op")", /*length=*/100);  // 5 of 100 bytes
  later.join();
  ASSERT_EQ(frames.size(), 1u) << "the holder kept waiting for the rest";
  EXPECT_EQ(frames[0].first, 5) << "not an error frame";
  auto e = nlohmann::json::parse(frames[0].second, nullptr, false);
  EXPECT_EQ(e["code"], static_cast<int>(StatusCode::kTimeout)) << frames[0].second;
}

}  // namespace
}  // namespace tpufleet
