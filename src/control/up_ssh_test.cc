// up's SSH steps: the login check and the setup script, on the fan-out engine.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "control/agent_install.h"
#include "control/host_keys.h"
#include "control/testing/test_world.h"
#include "control/testing/up_specs.h"
#include "control/up.h"
#include "control/up_steps.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

using testing::Contains;
using testing::kZoneB;
using testing::SmallNode;
using testing::TestWorld;
using testing::Trainer;

TEST(Up, WaitsForHostKeysAndSsh) {
  TestWorld t;
  t.cloud.SetHostKeyDelay(3);
  t.cloud.SetOperationPolls(4);
  t.workers.RefuseFirst(2);

  UpReport r = t.Up(t.Spec(Trainer()));

  EXPECT_EQ(r.nodes[0].status, Status::Ok());
  EXPECT_EQ(t.cloud.CallCount("GetWorkerIdentities"), 4);
  for (const WorkerRecord& w : t.Record("trainer").workers) {
    EXPECT_FALSE(w.host_key.empty());
  }
  EXPECT_EQ(t.workers.RunsOf("true"), 4 * 3) << "two refusals, then an answer, per worker";
}

// Up of trainer with a 2-minute wait, which must fail as a node whose workers never
// accept SSH does, saying `why`.
void ExpectUpFailsWithoutSsh(TestWorld& t, const std::string& why) {
  UpOptions quick;
  quick.timeout = std::chrono::minutes(2);

  UpReport r = t.Up(t.Spec(Trainer()), quick);

  EXPECT_EQ(r.nodes[0].status.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Contains(r.nodes[0].status.message(), "does not accept SSH"))
      << r.nodes[0].status.message();
  EXPECT_TRUE(Contains(r.nodes[0].status.message(), why)) << r.nodes[0].status.message();
}

TEST(Up, WorkerThatNeverAcceptsSshFailsTheNode) {
  TestWorld t;
  t.workers.RefuseFirst(1000000);
  ExpectUpFailsWithoutSsh(t, "Connection refused");
}

// Maintenance while up waits for SSH: the workers come back at new addresses and the
// old ones never answer. Up takes the node as it now is and reaches the workers there.
TEST(Up, WorkersMovedWhileWaitingForSshAreReachedWhereTheyNowAre) {
  TestWorld t;
  bool moved = false;
  t.workers.unreachable = [&](const FanoutHost& host) -> std::string {
    if (!moved) {
      moved = true;
      t.cloud.MoveWorkers(kZoneB, "trainer");
    }
    std::vector<CloudWorker> workers = t.cloud.Node(kZoneB, "trainer")->workers;
    for (const CloudWorker& w : workers) {
      if (w.SshAddress() == host.address) {
        return "";
      }
    }
    return "connect to " + host.address + " port 22: No route to host";
  };
  UpOptions quick;
  quick.timeout = std::chrono::minutes(2);

  UpReport r = t.Up(t.Spec(Trainer()), quick);

  ASSERT_EQ(r.nodes[0].status, Status::Ok());
  ASSERT_TRUE(moved);
  std::vector<CloudWorker> now = t.cloud.Node(kZoneB, "trainer")->workers;
  NodeRecord rec = t.Record("trainer");
  ASSERT_EQ(rec.workers.size(), now.size());
  for (size_t i = 0; i < now.size(); ++i) {
    EXPECT_EQ(rec.workers[i].address, now[i].SshAddress()) << i;
  }
  EXPECT_TRUE(Contains(t.SshConfig(), "Host trainer-w3\n  HostName " + now[3].SshAddress() + "\n"))
      << t.SshConfig();
  EXPECT_TRUE(Contains(t.KnownHosts(), now[0].SshAddress() + " " + rec.workers[0].host_key));
  EXPECT_EQ(t.Events("ready", "trainer").size(), 1u);
}

// Workers that move again at every look are taken again a few times, then the login
// wait runs out as for any worker that never answers (rather than up waiting for ever).
TEST(Up, WorkersThatKeepMovingFailTheNodeAfterAFewRetakes) {
  TestWorld t;
  t.workers.unreachable = [&](const FanoutHost& host) -> std::string {
    t.cloud.MoveWorkers(kZoneB, "trainer");
    return "connect to " + host.address + " port 22: No route to host";
  };
  ExpectUpFailsWithoutSsh(t, "No route to host");
  // The first look at the host keys, and one per retake.
  EXPECT_EQ(t.cloud.CallCount("GetWorkerIdentities"), 1 + 3);
}

// Up of trainer, preempted just before the next call of `method`: up deletes it and
// makes it again, and the preemption is one event.
void ExpectMadeAgainWhenPreemptedAt(const std::string& method, int ssh_refusals) {
  TestWorld t;
  t.workers.RefuseFirst(ssh_refusals);
  t.cloud.SetStateOnNext(method, kZoneB, "trainer", NodeState::kPreempted);

  UpReport r = t.Up(t.Spec(Trainer()));

  EXPECT_EQ(r.nodes[0].status, Status::Ok());
  EXPECT_EQ(t.cloud.creates(), 2);
  EXPECT_EQ(t.cloud.CallCount("DeleteNode"), 1);
  ASSERT_EQ(t.cloud.AllNodes().size(), 1u);
  EXPECT_EQ(t.cloud.AllNodes()[0].state, NodeState::kReady);
  EXPECT_EQ(t.Record("trainer").state, NodeState::kReady);
  EXPECT_EQ(t.Events("preempted", "trainer").size(), 1u);
}

TEST(Up, NodePreemptedWhileBootingIsMadeAgain) {
  ExpectMadeAgainWhenPreemptedAt("GetNode", 0);
}

TEST(Up, NodePreemptedWhileWaitingForSshIsMadeAgain) {
  // READY when looked at, preempted by the time its host keys are read; ssh refuses.
  ExpectMadeAgainWhenPreemptedAt("GetWorkerIdentities", 1);
}

// ---------------------------------------------------------------------------------------
// Setup scripts.

TEST(Up, SetupRunsOncePerWorkerAndAgainOnARecreatedNode) {
  TestWorld t;
  FleetSpec spec = t.Spec(Trainer("    setup: echo hello\n"));
  const std::string setup = spec.nodes[0].setup;
  ASSERT_FALSE(setup.empty());

  ASSERT_EQ(t.Up(spec).nodes[0].status, Status::Ok());
  EXPECT_EQ(t.workers.RunsWith(setup), 4);
  std::set<std::string> aliases;
  for (const testing::FakeWorkers::Call& c : t.workers.calls()) {
    if (c.script != "true") {
      aliases.insert(c.alias);
    }
  }
  EXPECT_EQ(aliases, (std::set<std::string>{"trainer-w0", "trainer-w1", "trainer-w2",
                                            "trainer-w3"}));
  for (const WorkerRecord& w : t.Record("trainer").workers) {
    EXPECT_TRUE(w.setup_done) << w.index;
  }
  EXPECT_EQ(t.Events("setup-done").size(), 4u);

  UpReport again = t.Up(spec);
  EXPECT_EQ(again.nodes[0].status, Status::Ok());
  EXPECT_FALSE(again.nodes[0].changed);
  EXPECT_EQ(t.workers.RunsWith(setup), 4) << "a second up does not rerun setup";

  // Preempted: up deletes it, makes it again (new VMs, new host keys), sets it up again.
  std::string old_key = t.Record("trainer").workers[0].host_key;
  t.cloud.Preempt(kZoneB, "trainer");
  t.cloud.ClearCalls();
  UpReport recreated = t.Up(spec);
  EXPECT_EQ(recreated.nodes[0].status, Status::Ok());
  EXPECT_TRUE(recreated.nodes[0].changed);
  EXPECT_EQ(t.cloud.CallCount("DeleteNode"), 1);
  EXPECT_EQ(t.cloud.creates(), 1);
  EXPECT_EQ(t.workers.RunsWith(setup), 8);
  NodeRecord rec = t.Record("trainer");
  EXPECT_EQ(rec.state, NodeState::kReady);
  EXPECT_NE(rec.workers[0].host_key, old_key);
  EXPECT_TRUE(Contains(t.KnownHosts(), rec.workers[0].host_key));
  EXPECT_FALSE(Contains(t.KnownHosts(), old_key)) << "the old VM's key is unpinned";
  EXPECT_EQ(t.Events("preempted", "trainer").size(), 1u);
}

TEST(Up, FailingSetupFailsThatNodeOnly) {
  TestWorld t;
  FleetSpec spec =
      t.Spec(Trainer("    setup: ./install.sh\n" + SmallNode("eval", "    setup: ./install.sh\n")));
  std::string output;
  for (int i = 1; i <= 12; ++i) {
    output += "step " + std::to_string(i) + "\n";
  }
  output += "E: No space left on device\n";
  t.workers.FailScriptsOn("trainer-w2", 3, output);

  UpReport r = t.Up(spec);

  ASSERT_EQ(r.nodes.size(), 2u);
  EXPECT_EQ(r.nodes[0].status.code(), StatusCode::kFailedPrecondition);
  const std::string& msg = r.nodes[0].status.message();
  EXPECT_TRUE(Contains(msg, "worker 2 of trainer")) << msg;
  EXPECT_TRUE(Contains(msg, "exit 3")) << msg;
  EXPECT_TRUE(Contains(msg, "E: No space left on device")) << msg;
  EXPECT_TRUE(Contains(msg, "step 4")) << msg;
  EXPECT_FALSE(Contains(msg, "step 3\n")) << "only the last lines: " << msg;
  EXPECT_TRUE(t.progress.Saw("trainer", NodePhase::kFailed));
  EXPECT_EQ(r.nodes[1].status, Status::Ok()) << "eval comes up regardless";

  NodeRecord rec = t.Record("trainer");
  for (const WorkerRecord& w : rec.workers) {
    EXPECT_EQ(w.setup_done, w.index != 2) << w.index;
  }

  // Fixed: the next up runs setup on worker 2 only.
  t.workers.FailScriptsOn("trainer-w2", 0, "");
  int before = t.workers.RunsWith("./install.sh");
  UpReport fixed = t.Up(spec);
  EXPECT_EQ(fixed.nodes[0].status, Status::Ok());
  EXPECT_EQ(t.workers.RunsWith("./install.sh"), before + 1);
}


// ---------------------------------------------------------------------------------------
// Issue 11: one SSH transport, and node steps one loop drives.

TEST(Issue11, UpLogsInAndRunsSetupOnTheFanoutEngineNotSsh) {
  TestWorld t;
  FleetSpec spec = t.Spec(Trainer("    setup: echo hello\n"));

  ASSERT_EQ(t.Up(spec).nodes[0].status, Status::Ok());

  EXPECT_TRUE(t.ssh.calls().empty()) << "no ssh process for a worker tpufleet made";
  ASSERT_EQ(t.fanout.jobs.size(), 5u)
      << "login check, agent check, agent install, accounts, setup";
  NodeRecord rec = t.Record("trainer");
  for (const FanoutJob& job : t.fanout.jobs) {
    EXPECT_EQ(job.key_path, t.world.paths.ssh_dir + "/id_ed25519");
    ASSERT_EQ(job.hosts.size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(job.hosts[i].name, "trainer-w" + std::to_string(i));
      EXPECT_EQ(job.hosts[i].address, rec.workers[i].address);
      EXPECT_EQ(job.hosts[i].user, "tester");
      EXPECT_EQ(job.hosts[i].host_key, rec.workers[i].host_key) << "the pinned key";
    }
  }
  EXPECT_EQ(t.fanout.jobs[0].stdin_header, "true");
  EXPECT_EQ(t.fanout.jobs[1].stdin_header, AgentCheckScript());
  EXPECT_EQ(t.fanout.jobs[2].command, AgentInstallCommand(t.AgentSha256(), 0));
  EXPECT_EQ(t.fanout.jobs[2].stdin_path, t.world.paths.agent_binary);
  EXPECT_EQ(t.fanout.jobs[3].command, AgentRootCallCommand());
  EXPECT_EQ(t.fanout.jobs[4].command, "bash -s");
  EXPECT_TRUE(Contains(t.fanout.jobs[4].stdin_header, "echo hello"));
}

TEST(Issue11, SixteenNodesShareOneLoginJobAndOneSetupJob) {
  TestWorld t;
  FleetSpec spec = t.Spec(std::string("fleet: lab\nproject: ") + testing::kProject +
                          "\nnodes:\n" + SmallNode("n", "    count: 16\n    setup: echo hi\n"));

  UpReport r = t.Up(spec);

  ASSERT_EQ(r.nodes.size(), 16u);
  for (const NodeOutcome& o : r.nodes) {
    EXPECT_EQ(o.status, Status::Ok()) << o.node;
  }
  ASSERT_EQ(t.fanout.jobs.size(), 5u) << "the nodes reach SSH together and go as one";
  for (const FanoutJob& job : t.fanout.jobs) {
    EXPECT_EQ(job.hosts.size(), 16u) << "login, agent check, install, accounts, setup";
  }
  EXPECT_EQ(t.Events("setup-done").size(), 16u);
}

TEST(Issue11, SshHostsMachinesAreLoggedInToWithOpenSshThenSetUpOnTheEngine) {
  // They take the user's own keys, which the fan-out engine does not hold, until the
  // login check has put the fleet key in; setup then runs as on any worker (as exec).
  TestWorld t;
  FleetSpec spec = testing::SshHostsSpec(t, "gpus", 4, "    setup: echo hi\n");

  UpReport r = t.Up(spec);

  ASSERT_EQ(r.nodes.size(), 1u);
  EXPECT_EQ(r.nodes[0].status, Status::Ok());
  // The login check also gives each login the fleet key (host_keys.h).
  std::string fleet_key = t.FleetPublicKey();
  EXPECT_EQ(t.ssh.RunsOf(AuthorizeFleetKeyScript(fleet_key)), 4);
  EXPECT_EQ(t.ssh.calls().size(), 4u) << "only the login check goes through OpenSSH";
  ASSERT_EQ(t.fanout.jobs.size(), 4u) << "agent check, install, accounts, setup: the engine";
  const FanoutJob& job = t.fanout.jobs[3];
  EXPECT_TRUE(Contains(job.stdin_header, "echo hi"));
  ASSERT_EQ(job.hosts.size(), 4u);
  NodeRecord rec = t.Record("gpus");
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(job.hosts[i].user, "ops");
    EXPECT_EQ(job.hosts[i].host_key, rec.workers[i].host_key) << "the pinned key";
  }
  for (const WorkerRecord& w : t.Record("gpus").workers) {
    EXPECT_TRUE(w.setup_done) << w.index;
  }
}

TEST(Issue11, ALongSetupDoesNotHoldUpAnotherNodesCloudPolls) {
  // "slow" reaches its setup at once, and its setup runs for ten minutes; "waiting" sits
  // in the queue for many cloud polls meanwhile. Each poll goes on while the setup runs.
  TestWorld t;
  t.cloud.SetQueuedWaitPolls(50);
  t.fanout.clock = &t.clock;
  t.fanout.run_time = [](const FanoutJob& job) -> std::chrono::nanoseconds {
    return Contains(job.stdin_header, "./long-setup.sh") ? std::chrono::minutes(10)
                                                         : std::chrono::minutes(0);
  };
  FleetSpec spec = t.Spec(std::string("fleet: lab\nproject: ") + testing::kProject +
                          "\nnodes:\n" + SmallNode("slow", "    setup: ./long-setup.sh\n") +
                          SmallNode("waiting", "    capacity: spot\n    queued: true\n"));

  UpReport r = t.Up(spec);

  ASSERT_EQ(r.nodes.size(), 2u);
  EXPECT_EQ(r.nodes[0].status, Status::Ok());
  EXPECT_EQ(r.nodes[1].status, Status::Ok());
  std::vector<std::string> ready;
  for (const NodeProgress& p : t.progress.all()) {
    if (p.phase == NodePhase::kReady) {
      ready.push_back(p.node);
    }
  }
  EXPECT_EQ(ready, (std::vector<std::string>{"waiting", "slow"}))
      << "the queued node came up while the other's setup ran";
}

TEST(Issue11, TheStepsNeverSleepAndSayWhenToRunNext) {
  TestWorld t;
  t.cloud.SetOperationPolls(3);
  FleetSpec spec = t.Spec(Trainer());
  Result<UpPlan> plan = PlanUp(spec, t.catalog, t.world);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  UpOptions options;
  FleetKey key = t.keys.Ensure().value();
  EventLoop loop(t.clock);
  up_internal::UpSteps steps(t.world, spec, plan->nodes, t.cloud, options, t.progress, &key,
                             loop);

  int turns = 0;
  while (!steps.done()) {
    Clock::MonoTime now = t.clock.MonotonicNow();
    loop.RunOnce(std::chrono::milliseconds(0));
    EXPECT_EQ(t.clock.MonotonicNow(), now) << "a step slept";
    ASSERT_LT(++turns, 100) << "no end in sight";
    if (std::optional<Clock::MonoTime> wake = steps.wake(); wake && *wake > now) {
      t.clock.Advance(*wake - now);
    }
  }

  EXPECT_GE(turns, 3) << "the create's operation was polled on later turns";
  std::vector<NodeOutcome> out = steps.Outcomes();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].status, Status::Ok());
  EXPECT_EQ(t.Record("trainer").state, NodeState::kReady);
}

}  // namespace
}  // namespace tpufleet
