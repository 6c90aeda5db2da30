// Down: deletes nodes (their queued resources too), waits until the cloud has let them
// go, forgets them in the store and removes their SSH entries. ssh-hosts machines are
// only forgotten: tpufleet never deletes what it did not create.
//
// Each node is removed from the store only after the cloud confirms it is gone, so a
// `down` killed half way leaves records that the next `down` (or `status --refresh`)
// finishes. Before the nodes, every recorded leftover (leftovers.h) of every fleet is
// deleted again: those are resources nobody wants that still bill.
//
// Thread-safety: one call at a time per store.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "control/leftovers.h"
#include "control/progress.h"
#include "control/up.h"
#include "control/world.h"

namespace tpufleet {

using DownOptions = DeleteOptions;  // per node

struct DownReport {
  std::vector<NodeOutcome> nodes;            // one per node asked for, in order
  std::vector<LeftoverOutcome> leftovers;    // every recorded leftover, tried first
  Status leftovers_status;                   // the store could not list them
};

/// Deletes the recorded leftovers of `leftover_fleets` (nullopt: of every fleet; a team
/// server's admin: of the fleets they administer), then `nodes`, concurrently.
DownReport Down(World& world, const std::vector<NodeRecord>& nodes, const DownOptions& options,
                ProgressObserver& progress,
                const std::optional<std::vector<std::string>>& leftover_fleets = std::nullopt);

}  // namespace tpufleet
