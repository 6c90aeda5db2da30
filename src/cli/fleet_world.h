// The seam between the fleet commands (up, status, down, import) and the real world.
//
// The CLI may not build real providers, stores or SSH runners (only src/app does), so
// each main puts a factory in its App (cli/app.h); tests put one that lends fakes.
//
// Thread-safety: a factory may be called from several threads at once.
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

/// Opens a world through the factory of `inv`'s App; Internal when it has none.
Result<std::unique_ptr<WorldHandle>> OpenWorld(Invocation& inv, bool exclusive);

}  // namespace tpufleet::cli
