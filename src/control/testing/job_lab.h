// JobLab: the fleet the tests of the agent client and of jobs work on, in a TestWorld
// whose workers answer as node agents (FakeAgents): "pod", a v4-32 (4 workers,
// 198.18.0.2-5), "solo", a v4-8 (1 worker, 198.18.1.2), and "empty", a node without
// workers yet.
//
// Thread-safety: one test thread.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "control/targets.h"
#include "control/testing/fake_agents.h"
#include "control/testing/test_world.h"

namespace tpufleet::testing {

class JobLab : public ::testing::Test {
 protected:
  void SetUp() override {
    Put("pod", "v4-32", 4, 0);
    Put("solo", "v4-8", 1, 1);
    Put("empty", "v4-8", 0, 2);
  }

  void Put(const std::string& name, const std::string& type, int workers, int net) {
    NodeRecord r;
    r.fleet = "lab";
    r.name = name;
    r.provider = "gcp-tpu";
    r.project = kProject;
    r.zone = kZoneB;
    r.type = type;
    r.state = NodeState::kReady;
    r.login = "tester";
    for (int i = 0; i < workers; ++i) {
      r.workers.push_back({i, "198.18." + std::to_string(net) + "." + std::to_string(i + 2),
                           name + "-host-" + std::to_string(i), kAliceKey, true, ""});
    }
    ASSERT_EQ(t_.store->PutNode(r), Status::Ok());
  }

  /// The workers `words` name (the test fails when they name none).
  std::vector<WorkerTarget> Workers(const std::vector<std::string>& words) {
    Result<std::vector<WorkerTarget>> w = ResolveTargets(*t_.store, words);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    return w.ok() ? *w : std::vector<WorkerTarget>{};
  }

  TestWorld t_;
  FakeAgents agents_{t_.fanout};
};

}  // namespace tpufleet::testing
