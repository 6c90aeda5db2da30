// `tpufleet serve` as its user meets it, with a fake engine standing for the reconciler
// and the HTTP API: bad specs refused before anything starts, --once, signals, reloads.
#include "cli/serve_command.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "cli/testing/run_cli.h"
#include "util/testing/temp_dir.h"

namespace tpufleet::cli {
namespace {

using cli_testing::Output;
using cli_testing::Tpufleet;

constexpr const char* kSpec =
    "fleet: lab\nprovider: emulator\nnodes:\n  - name: trainer\n    type: v4-8\n";
constexpr const char* kBadSpec =
    "fleet: lab\nprovider: emulator\nnodes:\n  - name: trainer\n    type: v4-9\n";

struct Calls {
  std::atomic<int> made{0}, once{0}, started{0}, stopped{0}, set{0};
  std::vector<std::string> nodes;  // the node names of the last SetFleets
  std::optional<int> api_calls;    // the last engine's settings.api_calls_per_minute
};

class FakeEngine final : public ServeEngine {
 public:
  explicit FakeEngine(Calls* calls) : calls_(calls) {}
  void SetFleets(std::vector<FleetSpec> fleets) override {
    calls_->nodes.clear();
    for (const NodeSpec& n : fleets.at(0).nodes) {
      calls_->nodes.push_back(n.name);
    }
    ++calls_->set;
  }
  Status RunOnce() override {
    ++calls_->once;
    return Status::Ok();
  }
  Status Start() override {
    ++calls_->started;
    return Status::Ok();
  }
  void Stop() override { ++calls_->stopped; }

 private:
  Calls* calls_;
};

App AppWith(Calls* calls) {
  App app{CliCommands(), nullptr};
  app.commands.push_back(ServeCommandRow(RunServe));
  app.serve = [calls](Invocation&, ServeSettings settings) -> Result<std::unique_ptr<ServeEngine>> {
    ++calls->made;
    calls->api_calls = settings.api_calls_per_minute;
    return std::unique_ptr<ServeEngine>(std::make_unique<FakeEngine>(calls));
  };
  return app;
}

TEST(ServeCommand, ABadSpecIsOneMessageAndNothingStarts) {
  TempDir dir;
  std::string good = dir.Write("good.yaml", kSpec);
  std::string bad = dir.Write("bad.yaml", kBadSpec);
  Calls calls;
  Output o = Tpufleet(AppWith(&calls), {"serve", good, bad, "--once"});
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find(bad + ":5"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("v4-9"), std::string::npos) << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  EXPECT_EQ(calls.made, 0);

  o = Tpufleet(AppWith(&calls), {"serve", good, dir.Write("same.yaml", kSpec), "--once"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("fleet \"lab\" is also"), std::string::npos) << o.err;
  o = Tpufleet(AppWith(&calls), {"serve", good, "--listen", "localhost", "--once"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("--listen takes ADDR:PORT"), std::string::npos) << o.err;
  EXPECT_EQ(calls.made, 0);
}

TEST(ServeCommand, OnceRunsOnePassAndStops) {
  TempDir dir;
  Calls calls;
  Output o = Tpufleet(AppWith(&calls), {"serve", dir.Write("f.yaml", kSpec), "--once"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(calls.once, 1);
  EXPECT_EQ(calls.started, 0);
  EXPECT_EQ(calls.stopped, 1);
}

TEST(ServeCommand, TheApiBudgetIsTheDefaultUnlessGivenAndMustBePositive) {
  TempDir dir;
  std::string spec = dir.Write("f.yaml", kSpec);
  Calls calls;
  Output o = Tpufleet(AppWith(&calls), {"serve", spec, "--once"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_FALSE(calls.api_calls.has_value());
  o = Tpufleet(AppWith(&calls), {"serve", spec, "--once", "--api-calls-per-minute", "600"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(calls.api_calls, 600);
  int made = calls.made;
  for (const char* bad : {"0", "-5", "many"}) {
    o = Tpufleet(AppWith(&calls), {"serve", spec, "--once", "--api-calls-per-minute", bad});
    EXPECT_EQ(o.code, 2) << bad;
    EXPECT_NE(o.err.find("--api-calls-per-minute"), std::string::npos) << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  }
  EXPECT_EQ(calls.made, made);
}

TEST(ServeCommand, ListenTakesAnAddressAndPort) {
  std::string address;
  int port = 0;
  EXPECT_TRUE(ParseListen("127.0.0.1:8471", &address, &port).ok());
  EXPECT_EQ(address, "127.0.0.1");
  EXPECT_EQ(port, 8471);
  EXPECT_TRUE(ParseListen("[::1]:0", &address, &port).ok());
  EXPECT_EQ(address, "::1");
  EXPECT_EQ(port, 0);
  for (const char* bad : {"8471", ":8471", "127.0.0.1:", "127.0.0.1:99999", "::1:80", "[::1:80"}) {
    EXPECT_FALSE(ParseListen(bad, &address, &port).ok()) << bad;
  }
}

TEST(ServeCommand, TlsFlagsGoTogetherAndPlainHttpStaysOnLoopback) {
  TempDir dir;
  std::string spec = dir.Write("f.yaml", kSpec);
  Calls calls;
  Output o = Tpufleet(AppWith(&calls), {"serve", spec, "--tls-cert", "c.pem", "--once"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err, "tpufleet: --tls-cert and --tls-key go together (the certificate and its key)\n");
  o = Tpufleet(AppWith(&calls), {"serve", spec, "--listen", "10.0.0.5:8471", "--plain-http"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err, "tpufleet: --plain-http is for a loopback address only (127.0.0.1, [::1]): on "
                   "10.0.0.5 the token would cross the network in the clear\n");
  EXPECT_EQ(calls.made, 0);
  o = Tpufleet(AppWith(&calls), {"serve", spec, "--listen", "[::1]:0", "--plain-http", "--once"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1") && IsLoopbackAddress("::1") &&
              !IsLoopbackAddress("0.0.0.0") && !IsLoopbackAddress("::"));
}

// Waits up to 10 s for `done`.
bool WaitFor(const std::function<bool()>& done) {
  for (int i = 0; i < 1000 && !done(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

// SIGHUP (and an edited file) reads the specs again: a spec that went bad is refused
// with its line and the last good one stays; SIGTERM ends serve cleanly.
TEST(ServeCommand, ReloadsKeepTheLastGoodSpecAndSigtermStops) {
  TempDir dir;
  std::string path = dir.Write("f.yaml", kSpec);
  Calls calls;
  pthread_t main_thread = pthread_self();
  std::thread driver([&] {
    ASSERT_TRUE(WaitFor([&] { return calls.started == 1; }));
    dir.Write("f.yaml", kBadSpec);
    pthread_kill(main_thread, SIGHUP);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    dir.Write("f.yaml", std::string(kSpec) + "  - name: eval\n    type: v4-8\n");
    // No signal: the changed mtime is noticed (a second's granularity on some file
    // systems, so the time is moved on by hand).
    timespec later[2] = {{0, UTIME_OMIT}, {::time(nullptr) + 5, 0}};
    ::utimensat(AT_FDCWD, path.c_str(), later, 0);
    ASSERT_TRUE(WaitFor([&] { return calls.set == 1; }));
    pthread_kill(main_thread, SIGTERM);
  });
  Output o = Tpufleet(AppWith(&calls), {"serve", path});
  driver.join();
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.err.find("reload refused: " + path + ":5"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("the last good specs stay in force"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("reloaded 1 fleet spec(s)"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("stopping (SIGTERM)"), std::string::npos) << o.err;
  EXPECT_EQ(calls.set, 1) << "the bad spec never reached the engine";
  EXPECT_EQ(calls.nodes, (std::vector<std::string>{"trainer", "eval"}));
  EXPECT_EQ(calls.stopped, 1);
}

}  // namespace
}  // namespace tpufleet::cli
