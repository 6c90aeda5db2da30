// Lending a test's World (control/testing/test_world.h's) to commands run in-process:
// LentWorld is a WorldHandle over it, and LendWorld makes OpenWorld hand it out. Include
// in tests only; reset the factory (SetWorldFactory(nullptr)) in TearDown.
#pragma once

#include <memory>

#include "cli/fleet_world.h"

namespace tpufleet::cli::cli_testing {

class LentWorld final : public WorldHandle {
 public:
  explicit LentWorld(World& world) : world_(world) {}
  World& world() override { return world_; }

 private:
  World& world_;
};

/// Every OpenWorld from now on gets `world` and adds one to `*opened`.
inline void LendWorld(World& world, int* opened) {
  SetWorldFactory([&world, opened](Invocation&, bool) -> Result<std::unique_ptr<WorldHandle>> {
    ++*opened;
    return std::unique_ptr<WorldHandle>(std::make_unique<LentWorld>(world));
  });
}

}  // namespace tpufleet::cli::cli_testing
