// Lending a test's World (control/testing/test_world.h's) to commands run in-process:
// LentWorld is a WorldHandle over it, and AppLending builds an App whose OpenWorld hands
// it out. Include in tests only.
#pragma once

#include <memory>

#include "cli/app.h"
#include "cli/fleet_world.h"

namespace tpufleet::cli::cli_testing {

class LentWorld final : public WorldHandle {
 public:
  explicit LentWorld(World& world) : world_(world) {}
  World& world() override { return world_; }

 private:
  World& world_;
};

/// An App with the CLI's commands whose every OpenWorld gets `world` and adds one to
/// `*opened`; both must outlive it.
inline App AppLending(World& world, int* opened) {
  return App{CliCommands(),
             [&world, opened](Invocation&, bool) -> Result<std::unique_ptr<WorldHandle>> {
               ++*opened;
               return std::unique_ptr<WorldHandle>(std::make_unique<LentWorld>(world));
             }};
}

}  // namespace tpufleet::cli::cli_testing
