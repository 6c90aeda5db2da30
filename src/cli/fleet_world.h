// The seam between the fleet commands (up, status, down, import) and the real world.
//
// The CLI may not build real providers, stores or SSH runners (only src/app does), so
// app registers a factory here before Main; tests register one that builds fakes.
//
// Thread-safety: set the factory once, before Main.
#pragma once

#include <functional>
#include <memory>

#include "cli/command.h"
#include "control/world.h"

namespace tpufleet::cli {

/// Owns a World and what it points at; closing it releases the state lock, if held.
class WorldHandle {
 public:
  virtual ~WorldHandle() = default;
  virtual World& world() = 0;
};

/// `exclusive`: the command changes the fleet (up, down, import) and must be the only
/// one doing so; the factory waits for, or refuses, another such command.
using WorldFactory =
    std::function<Result<std::unique_ptr<WorldHandle>>(Invocation& inv, bool exclusive)>;

void SetWorldFactory(WorldFactory factory);
Result<std::unique_ptr<WorldHandle>> OpenWorld(Invocation& inv, bool exclusive);

}  // namespace tpufleet::cli
