// The relay chain's hops, run here for real: cp's job goes to a FakeFanout whose answer
// runs every hop's command with `sh` and python3, each in a home of its own, on loopback
// addresses 127.0.0.2-5 (one per worker). An attacker, the user nobody, races the hops
// the way issue 10's review did: it listens on a hop's port to read the file, or connects
// to a hop first to inject its own bytes or to say nothing at all.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "control/copy.h"
#include "control/testing/copy_fixture.h"
#include "util/testing/as_nobody.h"
#include "util/unique_fd.h"

namespace tpufleet {
namespace {

namespace fs = std::filesystem;
using testing::Contains;
using testing::CopyTest;
using testing::Read;
using testing::Words;
using testing::Write;

// How long the harness lets a hop run before it kills it: far beyond an honest chain's
// few seconds, well below the ten minutes a silent connector held the old hop.
constexpr std::chrono::seconds kHopLimit{60};
// How long an attacker waits for its moment (the hop's port, a connection).
constexpr int kAttackerWaitMs = 20'000;

// Runs the relay job's hops: hops 1.. first, then `before_first` (an attacker's move),
// then hop 0, which gets the file; each with the job's stdin header.
class LocalChain {
 public:
  std::function<void(int port)> before_listeners;  // before any hop starts
  std::function<void(int port)> before_first;      // after hops 1.., before hop 0
  std::function<std::string(std::string)> header;  // may change the stdin header
  std::vector<ProgramResult> results;
  std::chrono::steady_clock::duration took{};

  void Run(const FanoutJob& job, const std::string& root) {
    std::string head = header ? header(job.stdin_header) : job.stdin_header;
    int port = std::stoi(Words(job.hosts[0].command)[7]);
    if (before_listeners) {
      before_listeners(port);
    }
    results.assign(job.hosts.size(), ProgramResult{});
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    auto hop = [&](size_t i) {
      std::string home = root + "/hop-" + std::to_string(i);
      fs::create_directories(home);
      std::string input = head + (i == 0 ? Read(job.stdin_path) : "");
      SpawnOptions options;
      options.env = {"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin"};
      Result<ProgramResult> r =
          RunSubprocess({"/bin/sh", "-c", "cd " + ShellQuote(home) + " && " + job.hosts[i].command},
                        input, kHopLimit, options);
      results[i] = r.ok() ? *r : ProgramResult{-1, r.status().ToString()};
    };
    for (size_t i = 1; i < job.hosts.size(); ++i) {
      threads.emplace_back(hop, i);
    }
    if (before_first) {
      before_first(port);
    }
    threads.emplace_back(hop, 0);
    for (auto& t : threads) {
      t.join();
    }
    took = std::chrono::steady_clock::now() - start;
  }
};

// A relay-sized file of random bytes to "lo", 4 workers on 127.0.0.2-5.
class RelayHopTest : public CopyTest {
 protected:
  void SetUp() override {
    CopyTest::SetUp();
    if (::access("/usr/bin/python3", X_OK) != 0) {
      GTEST_SKIP() << "the hops are python3 programs and this machine has no /usr/bin/python3";
    }
    if (auto why = NobodySkipReason()) {
      GTEST_SKIP() << *why;
    }
    NodeRecord& lo = Put("lo", 4);
    for (int i = 0; i < 4; ++i) {
      lo.workers[i].address = "127.0.0." + std::to_string(i + 2);
    }
    ASSERT_EQ(t_.store->PutNode(lo), Status::Ok());
    file_ = local_ + "/big.bin";
    ProgramResult r =
        testing::RunLocal({"head", "-c", std::to_string(kRelayMinBytes), "/dev/urandom"});
    Write(file_, r.output);
    t_.fanout.respond = [this](const FanoutHost& host, size_t i, FanoutSink& sink) {
      if (host.command.empty() || host.command == kRelayProbeCommand) {
        return HostResult{};  // the direct send, or the probe: not run here
      }
      if (i == 0) {
        chain_.Run(jobs().back(), t_.dir.path());
      }
      sink.OnOutput(i, OutputStream::kStdout, chain_.results[i].output);
      return testing::Exited(chain_.results[i].exit_code);
    };
  }

  Result<CopyReport> CpToLo() { return Cp({file_}, "lo:~/in/"); }

  // What hop i holds at the destination ("" for nothing), and whether a temporary file
  // is left beside it.
  std::string Landed(size_t i) {
    std::string path = t_.dir.path() + "/hop-" + std::to_string(i) + "/in/big.bin";
    return fs::exists(path) ? Read(path) : "";
  }
  bool TempLeft(size_t i) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(t_.dir.path() + "/hop-" + std::to_string(i) + "/in", ec)) {
      if (Contains(e.path().filename().string(), "tpufleet-tmp")) {
        return true;
      }
    }
    return false;
  }
  std::string Events(const CopyReport& r) { return Join(r.security_events, "\n"); }
  std::string Outputs() {
    std::string all;
    for (size_t i = 0; i < chain_.results.size(); ++i) {
      all += "hop " + std::to_string(i) + " (exit " + std::to_string(chain_.results[i].exit_code) +
             "): " + chain_.results[i].output + "\n";
    }
    return all;
  }

  LocalChain chain_;
  std::string file_;
};

sockaddr_in Loopback(const char* address, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, address, &a.sin_addr);
  return a;
}

// Waits up to `ms` for `fd` to be readable (or closed).
bool Readable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, ms) == 1;
}

// An attack run as nobody on a thread of its own, with a pipe to say it is in place and
// a pipe that the test closes to end it.
class Attacker {
 public:
  static constexpr int kMaxFd = 4096;  // far above what a test process holds open

  Attacker() {
    int a[2], b[2];
    EXPECT_EQ(::pipe2(a, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(b, O_CLOEXEC), 0);
    ready_r_ = UniqueFd(a[0]);
    ready_w_ = UniqueFd(a[1]);
    stop_r_ = UniqueFd(b[0]);
    stop_w_ = UniqueFd(b[1]);
  }
  ~Attacker() { Stop(); }
  // Runs fn(ready_fd, stop_fd) as nobody; returns once it wrote to ready_fd (or gave up).
  // The child keeps only those descriptors and `keep`: a copy of a hop's output pipe
  // would hold the harness until the attacker ends.
  void Start(std::function<int(int ready, int stop)> fn, int keep = -1) {
    thread_ = std::thread([this, fn, keep] {
      result_ = RunAsNobody([&] {
        for (int fd = 3; fd < kMaxFd; ++fd) {
          if (fd != ready_w_.get() && fd != stop_r_.get() && fd != keep) {
            ::close(fd);
          }
        }
        return fn(ready_w_.get(), stop_r_.get());
      });
    });
    EXPECT_TRUE(Readable(ready_r_.get(), kAttackerWaitMs)) << "the attacker never got in place";
  }
  int Stop() {
    stop_w_.Reset();
    if (thread_.joinable()) {
      thread_.join();
    }
    return result_;
  }

 private:
  UniqueFd ready_r_, ready_w_, stop_r_, stop_w_;
  std::thread thread_;
  int result_ = -1;
};

// The attacker's connection to a hop (127.0.0.3:port) from an earlier worker's address
// (127.0.0.2), as a user on that worker would make it; -1 when it never got one.
int ConnectAsEarlierWorker(int port) {
  for (int waited = 0; waited < kAttackerWaitMs; waited += 5) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in from = Loopback("127.0.0.2", 0);
    sockaddr_in to = Loopback("127.0.0.3", port);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) == 0 &&
        ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0) {
      return fd;
    }
    ::close(fd);
    ::usleep(5000);
  }
  return -1;
}

// Before the chain's first hop runs, `attacker` (nobody) connects to it as an earlier
// worker, says it is in place, does `act` with the connection, and waits to be stopped.
void ConnectFirst(LocalChain& chain, Attacker& attacker, std::function<void(int)> act) {
  chain.before_first = [&attacker, act](int port) {
    attacker.Start([port, act](int ready, int stop) {
      int c = ConnectAsEarlierWorker(port);
      if (c < 0) {
        return 2;
      }
      [[maybe_unused]] ssize_t w = ::write(ready, "r", 1);
      act(c);
      Readable(stop, kAttackerWaitMs);
      return 0;
    });
  };
}

// --- the key ---------------------------------------------------------------------------

// The hop's port and size were in argv, and nothing else was needed to join the chain.
TEST_F(RelayHopTest, Issue10EachCopyHasAFreshKeyOnStdinNeverInArgv) {
  t_.fanout.respond = [](const FanoutHost&, size_t, FanoutSink&) { return HostResult{}; };
  ASSERT_TRUE(CpToLo().ok());
  ASSERT_TRUE(CpToLo().ok());
  std::vector<FanoutJob> relays;
  for (const FanoutJob& job : jobs()) {
    if (!job.hosts[0].command.empty() && job.hosts[0].command != kRelayProbeCommand) {
      relays.push_back(job);
    }
  }
  ASSERT_EQ(relays.size(), 2u);
  std::vector<std::string> keys;
  for (const FanoutJob& job : relays) {
    std::vector<std::string> head = Split(job.stdin_header, ' ');
    ASSERT_EQ(head.size(), 2u) << job.stdin_header;
    EXPECT_EQ(head[0].size(), 2 * kRelayKeyBytes);
    EXPECT_EQ(head[1], testing::Sha256(file_) + "\n");
    for (const FanoutHost& h : job.hosts) {
      EXPECT_FALSE(Contains(h.command, head[0])) << "the key is on a command line";
    }
    keys.push_back(head[0]);
  }
  EXPECT_NE(keys[0], keys[1]);
}

TEST_F(RelayHopTest, Issue10AnHonestChainDeliversAndReportsNothing) {
  Result<CopyReport> report = CpToLo();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  std::string want = Read(file_);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(Landed(i) == want) << "hop " << i << "\n" << Outputs();
    EXPECT_FALSE(TempLeft(i)) << i;
  }
  EXPECT_EQ(report->security_events, std::vector<std::string>{}) << Outputs();
}

// --- a listener in a hop's place -------------------------------------------------------

// nobody listened on a hop's port first and received the whole file from the hop before.
TEST_F(RelayHopTest, Issue10AListenerInAHopsPlaceGetsNothingOfTheFile) {
  std::string got;
  Attacker attacker;
  UniqueFd loot(::memfd_create("loot", MFD_CLOEXEC));
  chain_.before_listeners = [&](int port) {
    attacker.Start([port, fd = loot.get()](int ready, int stop) {
      int s = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in at = Loopback("127.0.0.3", port);
      if (::bind(s, reinterpret_cast<sockaddr*>(&at), sizeof at) != 0 || ::listen(s, 8) != 0) {
        return 2;
      }
      [[maybe_unused]] ssize_t w = ::write(ready, "r", 1);
      pollfd p[2] = {{s, POLLIN, 0}, {stop, POLLIN, 0}};
      if (::poll(p, 2, kAttackerWaitMs) <= 0 || p[1].revents) {
        return 3;
      }
      int c = ::accept(s, nullptr, nullptr);
      char buf[65536];
      for (;;) {  // read all it sends, until it hangs up or the test ends
        pollfd q[2] = {{c, POLLIN, 0}, {stop, POLLIN, 0}};
        if (::poll(q, 2, kAttackerWaitMs) <= 0 || q[1].revents) {
          break;
        }
        ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0 || ::write(fd, buf, static_cast<size_t>(n)) != n) {
          break;
        }
      }
      return 0;
    }, loot.get());
  };
  Result<CopyReport> report = CpToLo();
  attacker.Stop();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  off_t size = ::lseek(loot.get(), 0, SEEK_END);
  // At most the connector's greeting (a version line and a nonce): not one byte of data.
  EXPECT_LE(size, 64) << "the attacker's listener received " << size << " bytes";
  EXPECT_TRUE(Contains(Events(*report), "lo/w0: impostor-listener 127.0.0.3:"))
      << Events(*report) << "\n" << Outputs();
  EXPECT_FALSE(report->ok());
  // The chain went around it: w2 and w3 have the file from w0; w1 (whose port was
  // taken) is left to the direct send.
  std::string want = Read(file_);
  EXPECT_TRUE(Landed(2) == want && Landed(3) == want) << Outputs();
  EXPECT_EQ(report->workers[1].how, "ssh");
}

// --- a connector that gets in first ----------------------------------------------------

// nobody on an earlier worker connected to a hop before its upstream did and sent its
// own bytes: they landed under the destination's name.
TEST_F(RelayHopTest, Issue10InjectedBytesNeverLandAndAreReported) {
  Attacker attacker;
  ConnectFirst(chain_, attacker, [](int c) {
    static char evil[1 << 16];
    std::fill(std::begin(evil), std::end(evil), 'A');
    for (size_t sent = 0; sent < kRelayMinBytes;) {
      ssize_t n = ::send(c, evil, sizeof evil, MSG_NOSIGNAL);
      if (n <= 0) {
        break;
      }
      sent += static_cast<size_t>(n);
    }
  });
  Result<CopyReport> report = CpToLo();
  attacker.Stop();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  std::string want = Read(file_);
  for (size_t i = 0; i < 4; ++i) {
    std::string landed = Landed(i);
    EXPECT_FALSE(Contains(landed, std::string(4096, 'A'))) << "attacker data at hop " << i;
    EXPECT_TRUE(landed == want) << "hop " << i << "\n" << Outputs();
    EXPECT_FALSE(TempLeft(i)) << i;
  }
  EXPECT_TRUE(Contains(Events(*report), "lo/w1: unauthenticated-connector 127.0.0.2"))
      << Events(*report) << "\n" << Outputs();
  EXPECT_FALSE(report->ok());
}

// nobody connected first and sent nothing: the hop waited for it without a timeout, and
// cp hung for ten minutes.
TEST_F(RelayHopTest, Issue10ASilentConnectorDelaysNothing) {
  Attacker attacker;
  ConnectFirst(chain_, attacker, [](int) {});  // and say nothing
  Result<CopyReport> report = CpToLo();
  attacker.Stop();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_LT(chain_.took, kRelayHandshakeTimeout) << Outputs();
  std::string want = Read(file_);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(Landed(i) == want) << "hop " << i << "\n" << Outputs();
  }
  EXPECT_TRUE(Contains(Events(*report), "lo/w1: unauthenticated-connector 127.0.0.2"))
      << Events(*report) << "\n" << Outputs();
}

// --- the digest ------------------------------------------------------------------------

// A hop renamed whatever it received into place; only cp compared digests afterwards.
TEST_F(RelayHopTest, Issue10DataThatIsNotTheSourceNeverTakesTheName) {
  Write(t_.dir.path() + "/hop-2/in/big.bin", "the old file");
  chain_.header = [](std::string head) {
    // The digest the hops are told differs from what they receive.
    head[65] = head[65] == '0' ? '1' : '0';
    return head;
  };
  Result<CopyReport> report = CpToLo();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(Landed(i) == (i == 2 ? "the old file" : "")) << "what is not the source landed at hop " << i;
    EXPECT_FALSE(TempLeft(i)) << i;
    EXPECT_EQ(report->workers[i].how, "ssh") << i;
  }
  EXPECT_TRUE(Contains(Events(*report), "lo/w3: digest-mismatch")) << Events(*report);
  EXPECT_FALSE(report->ok());
}

}  // namespace
}  // namespace tpufleet
