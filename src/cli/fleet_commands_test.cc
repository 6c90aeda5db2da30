// The fleet commands' own checks, in-process: what is refused before the world (state,
// cloud) is touched at all. Their work against a cloud is tested in src/control and,
// through the binary against the emulator, in test/fleet_e2e_test.sh.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "cli/fleet_world.h"
#include "cli/progress_view.h"
#include "cli/testing/lent_world.h"
#include "cli/testing/run_cli.h"
#include "control/testing/fake_ssh_hosts.h"
#include "control/testing/test_world.h"
#include "util/file.h"

namespace tpufleet::cli {
namespace {

using cli_testing::Contains;
using cli_testing::Output;
using cli_testing::Tpufleet;

class FleetCommandsTest : public ::testing::Test {
 protected:
  int opened_ = 0;  // how often a command reached for the world
  App app_{CliCommands(), [this](Invocation&, bool) -> Result<std::unique_ptr<WorldHandle>> {
             ++opened_;
             return FailedPreconditionError("test world: not available");
           }};
};

TEST_F(FleetCommandsTest, BadSpecStopsUpBeforeAnyStateOrApiCall) {
  Output o =
      Tpufleet(app_, {"up", std::string(TPUFLEET_SOURCE_DIR) + "/examples/broken/wrong-type.yaml"});
  EXPECT_EQ(o.code, 1);
  EXPECT_TRUE(Contains(o.err, "wrong-type.yaml:")) << o.err;
  EXPECT_EQ(opened_, 0);
}

TEST_F(FleetCommandsTest, UsageErrorsExit2AndTouchNothing) {
  EXPECT_EQ(Tpufleet(app_, {"up"}).code, 2);
  EXPECT_EQ(Tpufleet(app_, {"up", "a.yaml", "--timeout", "soon"}).code, 2);
  EXPECT_EQ(Tpufleet(app_, {"down"}).code, 2);
  EXPECT_EQ(Tpufleet(app_, {"down", "trainer", "--all"}).code, 2);
  EXPECT_EQ(Tpufleet(app_, {"import", "--zones", "us-central2-b"}).code, 2);
  Output bad_fleet =
      Tpufleet(app_, {"import", "--project", "p", "--zones", "z", "--fleet", "Bad Name"});
  EXPECT_EQ(bad_fleet.code, 2);
  EXPECT_TRUE(Contains(bad_fleet.err, "--fleet")) << bad_fleet.err;
  EXPECT_EQ(opened_, 0);
}

TEST_F(FleetCommandsTest, WorldErrorsAreReportedOnce) {
  Output o = Tpufleet(app_, {"status"});
  EXPECT_EQ(o.code, 1);
  EXPECT_TRUE(Contains(o.err, "test world: not available")) << o.err;
  EXPECT_EQ(opened_, 1);
}


// Issue 11, fix 4: an edited setup script was not applied and `up` said "nothing
// changed"; --dry-run did not say it would run it either.
TEST(Issue11, UpDryRunSaysAnEditedSetupRunsAgainOnEveryWorker) {
  testing::TestWorld t;
  // One v4-8 in the built-in catalog's v4 zone, its workers set up with `echo one`.
  auto spec = [](const std::string& setup) {
    return std::string("fleet: lab\nproject: ") + testing::kProject +
           "\nnodes:\n  - name: trainer\n    type: v4-8\n    zones: [us-central2-b]\n"
           "    setup: " + setup + "\n";
  };
  ASSERT_EQ(t.Up(t.Spec(spec("echo one"))).nodes[0].status, Status::Ok());
  t.cloud.ClearCalls();
  std::string path = t.dir.path() + "/lab.yaml";
  ASSERT_EQ(WriteFileAtomic(path, spec("echo two"), 0600), Status::Ok());

  int opened = 0;
  App app = cli_testing::AppLending(t.world, &opened);
  Output o = Tpufleet(app, {"up", path, "--dry-run"});
  Output j = Tpufleet(app, {"up", path, "--dry-run", "--json"});

  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(Contains(o.out, "setup changed: rerun on 1 worker")) << o.out;
  EXPECT_TRUE(Contains(j.out, "\"setup_reruns\": 1")) << j.out;
  EXPECT_EQ(t.cloud.mutating_calls(), 0);
}

// Issue 10: what a hostile API endpoint (or a compromised worker) says reached the
// user's terminal raw. A node state carrying OSC 52 wrote the user's clipboard, CSI
// sequences cleared the screen or hid lines, in status tables and in up's progress.
// What the terminal shows must be the text, its control bytes made visible.
bool HasTerminalControls(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    bool c1 = c == 0xc2 && i + 1 < text.size() &&
              static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
              static_cast<unsigned char>(text[i + 1]) <= 0x9f;
    if ((c < 0x20 && c != '\n') || c == 0x7f || c1) {
      return true;
    }
  }
  return false;
}

TEST(Issue10, StatusPrintsNoTerminalControlsFromTheCloud) {
  testing::TestWorld t;
  NodeRecord r;
  r.fleet = "lab";
  r.name = "pod";
  r.provider = "gcp-tpu";
  r.state = NodeState::Parse("READY\x1b]52;c;cm0gLXJmIH4K\x07");  // kept as text: unknown
  r.health = "\x1b[2J\x1b[HHEALTHY";
  r.workers.push_back({0, "198.18.0.2", "t1v\xc2\x9b" "31mw-0\x08\x08", testing::kAliceKey, true, ""});
  ASSERT_EQ(t.store->PutNode(r), Status::Ok());
  int opened = 0;
  App app = cli_testing::AppLending(t.world, &opened);
  Output o = Tpufleet(app, {"status", "--workers"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_FALSE(HasTerminalControls(o.out)) << o.out;
  EXPECT_TRUE(Contains(o.out, "READY\\x1b]52;c;cm0gLXJmIH4K\\x07")) << o.out;
  EXPECT_TRUE(Contains(o.out, "t1v\\xc2\\x9b31mw-0\\x08\\x08")) << o.out;
  // --json is for programs: its strings keep what the cloud said, escaped by JSON.
  Output j = Tpufleet(app, {"status", "--json"});
  EXPECT_EQ(j.out.find('\x1b'), std::string::npos) << j.out;
  EXPECT_TRUE(Contains(j.out, "READY\\u001b]52")) << j.out;
}

TEST(Issue10, ProgressPrintsNoTerminalControlsFromTheCloud) {
  for (ProgressView::Mode mode : {ProgressView::Mode::kLines, ProgressView::Mode::kLive}) {
    std::ostringstream out;
    ProgressView view(out, mode);
    view.OnProgress({"pod", NodePhase::kFailed, "us-central2-b",
                     "create failed: \x1b]0;owned\x07stockout\nsecond line"});
    std::string drawn = out.str();
    if (mode == ProgressView::Mode::kLive) {
      // The view's own cursor movement is all that stays.
      size_t at = 0;
      while ((at = drawn.find("\r\x1b[2K", at)) != std::string::npos) {
        drawn.erase(at, 5);
      }
    }
    EXPECT_FALSE(HasTerminalControls(drawn)) << drawn;
    EXPECT_TRUE(Contains(drawn, "create failed: \\x1b]0;owned\\x07stockout")) << drawn;
  }
}

// Issue 11: an ssh-hosts host key that is not in known_hosts is asked about at a
// terminal (y/N, with its fingerprint), pinned with --yes, and refused elsewhere.
class UpHostKeyTest : public ::testing::Test {
 protected:
  UpHostKeyTest()
      : world_(t_.WithProviders(hosts_)) {}
  void SetUp() override {
    hosts_.nodes["box"] = {{"gpu1.lab.example.org", "", kOffered}};
    spec_ = t_.dir.path() + "/lab.yaml";
    ASSERT_EQ(WriteFileAtomic(spec_,
                              "fleet: lab\nprovider: ssh-hosts\nnodes:\n  - name: box\n"
                              "    hosts: [gpu1.lab.example.org]\n    ssh_user: ops\n",
                              0600),
              Status::Ok());
  }

  // `up` with `extra` flags; `answer` typed at a terminal, or no terminal when null.
  Output Up(const std::vector<std::string>& extra, const char* answer) {
    std::vector<std::string> argv = {"up", spec_};
    argv.insert(argv.end(), extra.begin(), extra.end());
    std::istringstream in(answer ? answer : "");
    std::ostringstream out, err;
    Output o;
    o.code = static_cast<int>(Main(app_, argv, out, err, {{"HOME", cli_testing::kNoHome}},
                                   Terminal{false, answer ? &in : nullptr}));
    o.out = out.str();
    o.err = err.str();
    return o;
  }
  std::string Pinned() {
    for (const NodeRecord& r : t_.Records("lab")) {
      return r.workers.empty() ? "" : r.workers[0].host_key;
    }
    return "";
  }

  static constexpr char kOffered[] =
      "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGw6SazH8E4wAHaauG7OB3VjXkbuu9GiwOP564ZWS2Ju";
  static constexpr char kFingerprint[] = "SHA256:HXEt6KyTDmhlpUGpGa0CgTULFwNm5Pa9fSNicnQsXoU";
  testing::TestWorld t_;
  testing::FakeSshHosts hosts_;
  World world_;
  std::string spec_;
  int opened_ = 0;
  App app_ = cli_testing::AppLending(world_, &opened_);
};

TEST_F(UpHostKeyTest, Issue11NotAtATerminalItIsRefusedSayingToPassYes) {
  Output o = Up({}, nullptr);
  EXPECT_EQ(o.code, 1);
  EXPECT_TRUE(Contains(o.err, kFingerprint)) << o.err;
  EXPECT_TRUE(Contains(o.err, "--yes")) << o.err;
  EXPECT_EQ(Pinned(), "");
}

TEST_F(UpHostKeyTest, Issue11AtATerminalTheFingerprintIsShownAndOnlyYesPinsIt) {
  Output no = Up({}, "n\n");
  EXPECT_EQ(no.code, 1);
  EXPECT_TRUE(Contains(no.err, "gpu1.lab.example.org port 22 (box:0) is not in your known_hosts"))
      << no.err;
  EXPECT_TRUE(Contains(no.err, "It offers " + std::string(kFingerprint))) << no.err;
  EXPECT_TRUE(Contains(no.err, "Pin it? [y/N] ")) << no.err;
  EXPECT_EQ(Pinned(), "");

  Output yes = Up({}, "y\n");
  EXPECT_EQ(yes.code, 0) << yes.err;
  EXPECT_EQ(Pinned(), kOffered);
}

TEST_F(UpHostKeyTest, Issue11WithYesItIsPinnedAndSaysSo) {
  Output o = Up({"--yes"}, nullptr);
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(Contains(o.err, "Pinning the host key of gpu1.lab.example.org (box:0), " +
                                  std::string(kFingerprint)))
      << o.err;
  EXPECT_EQ(Pinned(), kOffered);
}

}  // namespace
}  // namespace tpufleet::cli
