// The node record the CLI's command tests store: one helper for the fleet "lab" they
// all set up. Include in tests only.
#pragma once

#include <string>

#include "control/testing/test_world.h"
#include "core/node_record.h"

namespace tpufleet::cli::cli_testing {

/// A READY node `name` of fleet "lab" on gcp-tpu, logging in as "tester", with `workers`
/// workers at 198.18.`subnet`.2 and up, each with kAliceKey pinned, set up, no hostname.
inline NodeRecord ReadyLabNode(const std::string& name, int workers, int subnet = 0) {
  NodeRecord r;
  r.fleet = "lab";
  r.name = name;
  r.provider = "gcp-tpu";
  r.state = NodeState::kReady;
  r.login = "tester";
  for (int i = 0; i < workers; ++i) {
    r.workers.push_back({i, "198.18." + std::to_string(subnet) + "." + std::to_string(i + 2),
                         "", testing::kAliceKey, true, ""});
  }
  return r;
}

}  // namespace tpufleet::cli::cli_testing
