// The --json of `up`, `up --dry-run` (also of a STOPPED node), `status`, `down`,
// `import` and `exec`, run in-process through the real command path (Main, the
// command's handler, control, the store) over a fake world (control/testing/
// test_world.h: a fake cloud, fake SSH, a fake clock, SQLite in a temp dir), compared
// byte for byte with golden files in src/cli/testdata/. No root, no network, no ssh
// process.
//
// What varies between runs is normalized before the comparison: the temp dir's path
// becomes <dir>. Times come from the fake clock, so they do not vary.
//
// To accept an intended change of the output: TPUFLEET_UPDATE_GOLDEN=1
// build/src/cli/cli_test --gtest_filter='JsonGolden*:Issue11*' rewrites the files; review
// `git diff src/cli/testdata` and commit it (api/testing/golden.h).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "api/testing/golden.h"
#include "cli/fleet_world.h"
#include "cli/testing/lab_node.h"
#include "cli/testing/lent_world.h"
#include "cli/testing/run_cli.h"
#include "control/leftovers.h"
#include "control/testing/test_world.h"
#include "util/file.h"
#include "util/strings.h"

namespace tpufleet::cli {
namespace {

using api_testing::ExpectGolden;
using cli_testing::Contains;
using cli_testing::Output;
using cli_testing::Tpufleet;
using testing::kProject;
using testing::kZoneA;
using testing::kZoneB;

// Fleet lab: trainer (a spot v4-32 that may go to either zone) and eval (a v4-8 that
// may only go to zone b).
constexpr char kSpec[] =
    "fleet: lab\n"
    "project: lab-project\n"
    "nodes:\n"
    "  - name: trainer\n"
    "    type: v4-32\n"
    "    zones: [us-central2-b, us-central2-a]\n"
    "    capacity: spot\n"
    "  - name: eval\n"
    "    type: v4-8\n"
    "    zones: [us-central2-b]\n";

// The test world's catalog: the built-in one offers v4 in one zone, failover needs two.
constexpr char kCatalogOverlay[] = "families:\n  v4:\n    zones: [us-central2-b, us-central2-a]\n";

// `text` with every `from` replaced by `to`.
std::string Replaced(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

class JsonGolden : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(WriteFileAtomic(Path("fleet.yaml"), kSpec), Status::Ok());
    ASSERT_EQ(WriteFileAtomic(Path("catalog.yaml"), kCatalogOverlay), Status::Ok());
  }

  std::string Path(const std::string& name) { return t_.dir.path() + "/" + name; }

  // Runs `tpufleet COMMAND --json --catalog <overlay> ARGS` (before any `--`, which
  // begins exec's command); the exit status must be `code`.
  std::string Json(std::vector<std::string> argv, int code = 0) {
    argv.insert(argv.begin() + 1, {"--json", "--catalog", Path("catalog.yaml")});
    Output o = Tpufleet(app_, argv);
    EXPECT_EQ(o.code, code) << Join(argv, " ") << "\n" << o.err;
    return Replaced(o.out, t_.dir.path(), "<dir>");
  }

  // A node made outside this store with the fleet's label: untracked.
  void AddStray(const std::string& name, const std::string& zone) {
    CreateNodeRequest stray;
    stray.zone = zone;
    stray.node_id = name;
    stray.type = "v4-8";
    stray.labels = {{kFleetLabel, "lab"}};
    t_.cloud.AddNode(stray);
  }

  // A READY node of fleet lab on gcp-tpu, created now, logging in as tester, with
  // `workers` workers at 198.18.0.2 and up (their hostnames empty).
  NodeRecord Node(const std::string& name, int workers) {
    NodeRecord r = cli_testing::ReadyLabNode(name, workers);
    r.created_at = t_.clock.Now();
    return r;
  }

  // A leftover of fleet lab recorded an hour ago, whose delete failed once.
  LeftoverRecord Leftover(const std::string& name, const std::string& zone) {
    LeftoverRecord x;
    x.fleet = "lab";
    x.name = name;
    x.zone = zone;
    x.provider = "gcp-tpu";
    x.project = kProject;
    x.type = "v4-32";
    x.capacity = "spot";
    x.reason = "stockout";
    x.last_error = "HTTP 503";
    x.since = t_.clock.Now() - std::chrono::hours(1);
    return x;
  }

  testing::TestWorld t_;
  int opened_ = 0;
  App app_ = cli_testing::AppLending(t_.world, &opened_);
};

// Zone b is stocked out: trainer fails over to zone a, eval (zone b only) fails. A
// leftover is deleted first; a node with the fleet's label and no record is reported.
TEST_F(JsonGolden, Up) {
  t_.cloud.SetStockout(kZoneB);
  ASSERT_EQ(t_.store->PutLeftover(Leftover("old", kZoneA)), Status::Ok());
  AddStray("stray", kZoneA);
  ExpectGolden("src/cli/testdata/up.json", Json({"up", Path("fleet.yaml")}, 1));
}

// Before anything exists: both nodes would be created; a leftover and a stray are shown.
TEST_F(JsonGolden, UpDryRun) {
  ASSERT_EQ(t_.store->PutLeftover(Leftover("old", kZoneA)), Status::Ok());
  AddStray("stray", kZoneA);
  ExpectGolden("src/cli/testdata/up_dry_run.json",
               Json({"up", Path("fleet.yaml"), "--dry-run"}));
}

// Both made, then eval stopped (by serve's idle policy, or by hand): the plan keeps
// trainer and starts eval, its boot disk kept.
TEST_F(JsonGolden, UpDryRunStartsAStoppedNode) {
  Json({"up", Path("fleet.yaml")});
  t_.cloud.SetState(kZoneB, "eval", NodeState::kStopped);
  ExpectGolden("src/cli/testdata/up_dry_run_start.json",
               Json({"up", Path("fleet.yaml"), "--dry-run"}));
}

// From local state: a spot pod with two workers and labels, created 90 minutes ago; an
// ssh-hosts machine (no price); a leftover; a recovery and a serve that stopped passing.
TEST_F(JsonGolden, Status) {
  NodeRecord pod = Node("pod", 2);
  pod.project = kProject;
  pod.zone = kZoneB;
  pod.type = "v4-16";
  pod.capacity = "spot";
  pod.health = "HEALTHY";
  pod.labels = {{"team", "a"}};
  pod.data_disks = {{"projects/lab-project/zones/us-central2-b/disks/data", "read-only"}};
  pod.created_at = t_.clock.Now() - std::chrono::minutes(90);
  pod.workers[0].hostname = "t1v-n-pod-w-0";
  pod.workers[1].hostname = "t1v-n-pod-w-1";
  pod.workers[1].setup_done = false;
  NodeRecord lab = Node("lab1", 0);
  lab.provider = "ssh-hosts";
  lab.login = "";
  lab.created_at = t_.clock.Now() - std::chrono::hours(24);
  lab.workers = {{0, "10.1.2.3", "", "", true, ""}};
  ASSERT_EQ(t_.store->PutNode(pod), Status::Ok());
  ASSERT_EQ(t_.store->PutNode(lab), Status::Ok());
  ASSERT_EQ(t_.store->PutLeftover(Leftover("old", kZoneA)), Status::Ok());
  // pod recovered from a preemption in 53 s; the serve that saw to it ran on another
  // machine and has not passed for an hour (issue 14).
  Clock::WallTime now = t_.clock.Now();
  ASSERT_EQ(t_.store->AddEvent({0, now - std::chrono::minutes(30), "lab", "pod", "recovered",
                                "seconds=53.0"}),
            Status::Ok());
  ASSERT_EQ(t_.store->PutServe({4242, "serve-host.invalid", {"lab"}, now - std::chrono::hours(2),
                                 now - std::chrono::hours(1)}),
            Status::Ok());
  ExpectGolden("src/cli/testdata/status.json", Json({"status"}));
}

// Both nodes up, then down: each deleted, the leftover first.
TEST_F(JsonGolden, Down) {
  ASSERT_EQ(Tpufleet(app_, {"up", Path("fleet.yaml"), "--catalog", Path("catalog.yaml")}).code, 0);
  ASSERT_EQ(t_.store->PutLeftover(Leftover("old", kZoneA)), Status::Ok());
  ExpectGolden("src/cli/testdata/down.json", Json({"down", "--all", "--yes"}));
}

// Nodes made with gcloud adopted into fleet `imported`: both found in zone b.
TEST_F(JsonGolden, Import) {
  for (const char* name : {"notebook", "sweep"}) {
    CreateNodeRequest r;
    r.zone = kZoneB;
    r.node_id = name;
    r.type = "v4-8";
    t_.cloud.AddNode(r);
  }
  ExpectGolden("src/cli/testdata/import.json",
               Json({"import", "--project", kProject, "--zones", kZoneB}));
}

// exec on the two workers of pod: one prints its name and exits 0, one is unreachable.
TEST_F(JsonGolden, Exec) {
  ASSERT_EQ(t_.store->PutNode(Node("pod", 2)), Status::Ok());
  t_.fanout.respond = [](const FanoutHost& host, size_t index, FanoutSink& sink) {
    HostResult r;
    if (host.name == "pod/w1") {
      r.outcome = HostOutcome::kUnreachable;
      r.message = "connect: No route to host";
      return r;
    }
    sink.OnOutput(index, OutputStream::kStdout, host.name + "\n");
    sink.OnOutput(index, OutputStream::kStderr, "a warning\n");
    return r;
  };
  ExpectGolden("src/cli/testdata/exec.json", Json({"exec", "pod", "--", "hostname"}, 1));
}

// Issue 11: `down --json` with nothing to delete printed {"nodes": []}, without the
// "leftovers_tried" every other down document has: a script reading it failed only
// when the fleet was already gone.
TEST_F(JsonGolden, Issue11DownWithNothingToDeleteWritesTheWholeDocument) {
  ExpectGolden("src/cli/testdata/down_nothing.json", Json({"down", "--all", "--yes"}));
}

// Issue 11: a node's state or a worker's hostname is what the cloud said, bytes that
// need not be UTF-8; `status --json` threw nlohmann's type_error on them, uncaught, and
// the process aborted. The document must come out, each bad byte as U+FFFD.
TEST_F(JsonGolden, Issue11StatusOfBytesThatAreNotUtf8IsStillADocument) {
  NodeRecord r = Node("pod", 1);
  r.state = NodeState::Parse("READY\xff");  // kept as text: unknown
  r.workers[0].hostname = "t1v-\xc3";
  ASSERT_EQ(t_.store->PutNode(r), Status::Ok());
  std::string out;
  EXPECT_NO_THROW(out = Json({"status"}));
  EXPECT_TRUE(Contains(out, "\"state\": \"READY\xef\xbf\xbd\"")) << out;
  EXPECT_TRUE(Contains(out, "\"hostname\": \"t1v-\xef\xbf\xbd\"")) << out;
}

}  // namespace
}  // namespace tpufleet::cli
