// up's agent steps (issue 12): the node agent checked on every worker, installed where
// it is not the CLI's, recorded so a resumed up does not install again, the spec's
// accounts made through it.
#include <gtest/gtest.h>

#include <string>

#include "control/agent_install.h"
#include "control/testing/test_world.h"
#include "control/testing/up_specs.h"
#include "control/up.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

using testing::Contains;
using testing::SmallNode;
using testing::TestWorld;
using testing::Trainer;

const std::string kOldAgent(64, 'e');  // some other build's hash

// The hosts (aliases) of the fan-out jobs that installed the agent.
std::vector<std::string> InstalledOn(const TestWorld& t) {
  std::vector<std::string> out;
  for (const FanoutJob& job : t.fanout.jobs) {
    if (!job.stdin_path.empty()) {
      for (const FanoutHost& h : job.hosts) {
        out.push_back(h.name);
      }
    }
  }
  return out;
}

bool SawDetail(const TestWorld& t, const std::string& node, const std::string& part) {
  for (const NodeProgress& p : t.progress.all()) {
    if (p.node == node && p.phase == NodePhase::kAgent && Contains(p.detail, part)) {
      return true;
    }
  }
  return false;
}

TEST(UpAgent, IsInstalledOnlyWhereItIsNotTheClisAndAnswering) {
  TestWorld t;
  std::string sha = t.AgentSha256();
  t.workers.SetAgent("trainer-w0", sha);        // current
  t.workers.SetAgent("trainer-w1", kOldAgent);  // an older build
  t.workers.SetAgent("trainer-w3", sha);        // current but not running
  t.workers.StopAgent("trainer-w3");            // (w2 has none)

  UpReport r = t.Up(t.Spec(Trainer()));

  ASSERT_EQ(r.nodes[0].status, Status::Ok());
  EXPECT_EQ(InstalledOn(t), (std::vector<std::string>{"trainer-w1", "trainer-w2", "trainer-w3"}));
  for (const FanoutJob& job : t.fanout.jobs) {
    if (!job.stdin_path.empty()) {
      EXPECT_EQ(job.stdin_path, t.world.paths.agent_binary) << "the CLI's binary on stdin";
      EXPECT_EQ(job.command, AgentInstallCommand(sha, 0));
      EXPECT_TRUE(Contains(job.command, "sudo -n \"$t\" install"));
    }
  }
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(t.workers.Agent("trainer-w" + std::to_string(i)), sha) << i;
    EXPECT_EQ(t.Record("trainer").workers[i].agent_sha256, sha) << i;
  }
  EXPECT_EQ(t.Events("agent-installed", "trainer").size(), 3u);
  EXPECT_TRUE(SawDetail(t, "trainer", "installing on 3 workers"));
  EXPECT_TRUE(r.nodes[0].changed);
}

TEST(UpAgent, AFailedInstallFailsThatNodeOnlySayingWhereAndWhy) {
  TestWorld t;
  FleetSpec spec = t.Spec(Trainer("    setup: ./install.sh\n" + SmallNode("eval")));
  t.workers.FailInstallOn("trainer-w2", 1,
                          "step one\ntpufleet-agent install: /usr/local/bin: Read-only file "
                          "system\n");

  UpReport r = t.Up(spec);

  ASSERT_EQ(r.nodes.size(), 2u);
  EXPECT_EQ(r.nodes[0].status.code(), StatusCode::kFailedPrecondition);
  const std::string& msg = r.nodes[0].status.message();
  EXPECT_TRUE(Contains(msg, "installing the agent failed on worker 2 of trainer (exit 1)")) << msg;
  EXPECT_TRUE(Contains(msg, "  tpufleet-agent install: /usr/local/bin: Read-only file system"))
      << msg;
  EXPECT_EQ(r.nodes[1].status, Status::Ok()) << "eval comes up regardless";
  EXPECT_EQ(t.workers.RunsWith("./install.sh"), 0) << "no setup on a node whose agent failed";
  NodeRecord rec = t.Record("trainer");
  for (const WorkerRecord& w : rec.workers) {
    EXPECT_EQ(w.agent_sha256, w.index == 2 ? "" : t.AgentSha256()) << w.index;
  }
}

TEST(UpAgent, AResumedUpDoesNotInstallAgainAndADoneOneOpensNoConnection) {
  TestWorld t;
  FleetSpec spec = t.Spec(Trainer("    setup: ./install.sh\n"));
  t.workers.FailScriptsOn("trainer-w2", 1, "E: broken\n");  // up stops after the agents
  EXPECT_FALSE(t.Up(spec).nodes[0].status.ok());
  EXPECT_EQ(t.workers.installs(), 4);

  t.workers.FailScriptsOn("trainer-w2", 0, "");
  ASSERT_EQ(t.Up(spec).nodes[0].status, Status::Ok());
  EXPECT_EQ(t.workers.installs(), 4) << "every agent was current: none installed again";

  size_t jobs = t.fanout.jobs.size();
  UpReport again = t.Up(spec);
  EXPECT_EQ(again.nodes[0].status, Status::Ok());
  EXPECT_FALSE(again.nodes[0].changed);
  EXPECT_EQ(t.fanout.jobs.size(), jobs) << "setup done, agents recorded: no SSH at all";
}

TEST(UpAgent, ANewCliAgentReplacesTheWorkersOnTheNextUp) {
  TestWorld t;
  FleetSpec spec = t.Spec(Trainer());
  ASSERT_EQ(t.Up(spec).nodes[0].status, Status::Ok());
  ASSERT_EQ(t.workers.installs(), 4);

  t.dir.Write("bin/tpufleet-agent", "agent v2");  // tpufleet was upgraded
  UpReport r = t.Up(spec);

  ASSERT_EQ(r.nodes[0].status, Status::Ok());
  EXPECT_EQ(t.workers.installs(), 8);
  std::string v2 = t.AgentSha256();
  for (const WorkerRecord& w : t.Record("trainer").workers) {
    EXPECT_EQ(w.agent_sha256, v2) << w.index;
    EXPECT_EQ(t.workers.Agent("trainer-w" + std::to_string(w.index)), v2);
  }
}

// The spec's monitoring.prometheus_port is part of the agent as up installs it: a port
// that changes (or goes) reinstalls every worker's agent on the next up.
TEST(UpAgent, AChangedPrometheusPortReinstallsOnTheNextUp) {
  TestWorld t;
  std::string sha = t.AgentSha256();
  FleetSpec with9100 = t.Spec(Trainer());
  with9100.monitoring.prometheus_port = 9100;
  ASSERT_EQ(t.Up(with9100).nodes[0].status, Status::Ok());
  EXPECT_EQ(t.workers.installs(), 4);
  for (const FanoutJob& job : t.fanout.jobs) {
    if (!job.stdin_path.empty()) {
      EXPECT_EQ(job.command, AgentInstallCommand(sha, 9100));
      EXPECT_TRUE(Contains(job.command, "sudo -n \"$t\" install --prometheus 9100"));
    }
  }
  for (const WorkerRecord& w : t.Record("trainer").workers) {
    EXPECT_EQ(w.agent_sha256, sha + " prometheus=9100") << w.index;
  }
  size_t jobs = t.fanout.jobs.size();
  EXPECT_FALSE(t.Up(with9100).nodes[0].changed);
  EXPECT_EQ(t.fanout.jobs.size(), jobs) << "the same port: recorded, no SSH at all";

  FleetSpec with9200 = with9100;
  with9200.monitoring.prometheus_port = 9200;
  ASSERT_EQ(t.Up(with9200).nodes[0].status, Status::Ok());
  EXPECT_EQ(t.workers.installs(), 8);
  EXPECT_EQ(t.workers.Prometheus("trainer-w3"), "9200");

  ASSERT_EQ(t.Up(t.Spec(Trainer())).nodes[0].status, Status::Ok());
  EXPECT_EQ(t.workers.installs(), 12) << "monitoring removed from the spec";
  EXPECT_EQ(t.workers.Prometheus("trainer-w3"), "none");
  EXPECT_EQ(t.Record("trainer").workers[3].agent_sha256, sha);
}

TEST(UpAgent, TheSpecsUsersAreMadeThroughTheAgentAsRoot) {
  TestWorld t;
  FleetSpec spec = t.Spec(
      std::string("fleet: lab\nproject: ") + testing::kProject + "\nusers:\n" +
      "  - {name: alice, keys: [\"" + testing::kAliceKey + "\"], sudo: true}\n" +
      "  - {name: bob, keys: [\"" + testing::kBobKey + "\"]}\n" +
      "nodes:\n  - name: trainer\n    type: v4-32\n    zones: [us-central2-b]\n");

  ASSERT_EQ(t.Up(spec).nodes[0].status, Status::Ok());

  EXPECT_EQ(t.workers.AccountsOn(),
            (std::vector<std::string>{"trainer-w0", "trainer-w1", "trainer-w2", "trainer-w3"}));
  for (const testing::FakeWorkers::Call& c : t.workers.calls()) {
    if (c.command == AgentRootCallCommand()) {
      EXPECT_EQ(c.command, "sudo -n /usr/local/bin/tpufleet-agent call");
      EXPECT_EQ(c.script, AccountsRequestLine(UsersOn(spec, spec.nodes[0])));
      EXPECT_TRUE(Contains(c.script, "\"op\":\"accounts.apply\"")) << c.script;
    }
  }
  EXPECT_TRUE(SawDetail(t, "trainer", "making 2 accounts on 4 workers"));
}

// A v4-32 with two data disks, one of them mounted at /data (issue 15).
FleetSpec DiskSpec(TestWorld& t, const std::string& setup = "") {
  std::string disks = std::string("projects/") + testing::kProject + "/zones/us-central2-b/disks/";
  return t.Spec(std::string("fleet: lab\nproject: ") + testing::kProject +
                "\nnodes:\n  - name: trainer\n    type: v4-32\n    zones: [us-central2-b]\n" +
                "    data_disks:\n      - {source: " + disks + "imagenet, mount: /data}\n" +
                "      - {source: " + disks + "scratch}\n" + setup);
}

TEST(UpAgent, TheSpecsDiskMountsAreMadeOnEveryWorkerBeforeSetup) {
  TestWorld t;
  ASSERT_EQ(t.Up(DiskSpec(t, "    setup: ls /data\n")).nodes[0].status, Status::Ok());
  EXPECT_EQ(t.workers.MountsOn(),
            (std::vector<std::string>{"trainer-w0", "trainer-w1", "trainer-w2", "trainer-w3"}));
  EXPECT_EQ(t.workers.MountRequests(),
            std::vector<std::string>(4, "imagenet:/data:ro")) << "the unmounted disk is left alone";
  EXPECT_TRUE(SawDetail(t, "trainer", "mounting 1 disk on 4 workers"));
  // Setup comes after the mounts on every worker, so it finds /data.
  size_t last_mount = 0, first_setup = t.workers.calls().size();
  for (size_t i = 0; i < t.workers.calls().size(); ++i) {
    const testing::FakeWorkers::Call& c = t.workers.calls()[i];
    if (Contains(c.script, "disks.mount")) {
      last_mount = i;
    } else if (Contains(c.script, "ls /data")) {
      first_setup = std::min(first_setup, i);
    }
  }
  EXPECT_LT(last_mount, first_setup);
  // A node without data disks costs no round trip.
  TestWorld plain;
  ASSERT_EQ(plain.Up(plain.Spec(Trainer())).nodes[0].status, Status::Ok());
  EXPECT_TRUE(plain.workers.MountsOn().empty());
}

TEST(UpAgent, AMountTheAgentRefusesFailsTheNodeNamingWorkerDiskAndReason) {
  TestWorld t;
  t.workers.FailMountOn("trainer-w2", "disk imagenet is not attached to this worker");
  UpReport r = t.Up(DiskSpec(t));
  EXPECT_EQ(r.nodes[0].status.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(r.nodes[0].status.message(),
                       "mounting the spec's disks on worker 2 of trainer: the agent could not "
                       "mount every disk: imagenet at /data: disk imagenet is not attached to "
                       "this worker"))
      << r.nodes[0].status.message();
}

TEST(UpAgent, AGcpWorkerWhoseLoginMayNotSudoFailsClearly) {
  TestWorld t;
  t.workers.NoSudoOn("trainer-w1");
  UpReport r = t.Up(t.Spec(Trainer()));
  EXPECT_EQ(r.nodes[0].status.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(r.nodes[0].status.message(),
                       "the agent cannot be installed on worker 1 of trainer: its login "
                       "tester may not run `sudo -n`"))
      << r.nodes[0].status.message();
}

TEST(UpAgent, AMissingAgentBinaryFailsTheNodeSayingWhereItWasLookedFor) {
  TestWorld t;
  t.world.paths.agent_binary = t.dir.Path("bin/no-such-agent");
  UpReport r = t.Up(t.Spec(Trainer()));
  EXPECT_EQ(r.nodes[0].status.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(r.nodes[0].status.message(), t.dir.Path("bin/no-such-agent")));
  EXPECT_TRUE(Contains(r.nodes[0].status.message(), "TPUFLEET_AGENT_BINARY"));
}

TEST(UpAgent, SshHostsWithoutSudoAreSkippedWithOneWarning) {
  TestWorld t;
  FleetSpec spec = testing::SshHostsSpec(t, "gpus", 2);
  t.workers.NoSudoOn("gpus-w0");
  t.workers.NoSudoOn("gpus-w1");

  UpReport r = t.Up(spec);

  ASSERT_EQ(r.nodes[0].status, Status::Ok());
  ASSERT_EQ(r.nodes[0].warnings.size(), 1u);
  EXPECT_TRUE(Contains(r.nodes[0].warnings[0],
                       "the node agent is not installed on 2 workers: login ops has no "
                       "passwordless sudo there"))
      << r.nodes[0].warnings[0];
  EXPECT_EQ(t.workers.installs(), 0);
  size_t jobs = t.fanout.jobs.size();
  EXPECT_EQ(t.Up(spec).nodes[0].status, Status::Ok());
  EXPECT_EQ(t.fanout.jobs.size(), jobs) << "known not installable: not looked at again";
}

}  // namespace
}  // namespace tpufleet
