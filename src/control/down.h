// Down: deletes nodes (their queued resources too), waits until the cloud has let them
// go, forgets them in the store and removes their SSH entries. ssh-hosts machines are
// only forgotten: tpufleet never deletes what it did not create.
//
// Each node is removed from the store only after the cloud confirms it is gone, so a
// `down` killed half way leaves records that the next `down` (or `status --refresh`)
// finishes.
//
// Thread-safety: one call at a time per store.
#pragma once

#include <chrono>
#include <vector>

#include "control/progress.h"
#include "control/up.h"
#include "control/world.h"

namespace tpufleet {

struct DownOptions {
  std::chrono::seconds timeout{std::chrono::minutes(15)};  // per node
  std::chrono::milliseconds poll_min{250};
  std::chrono::milliseconds poll_max{std::chrono::seconds(2)};
};

/// Deletes `nodes` concurrently; one outcome per node, in order.
std::vector<NodeOutcome> Down(World& world, const std::vector<NodeRecord>& nodes,
                              const DownOptions& options, ProgressObserver& progress);

}  // namespace tpufleet
