// Import: adopts nodes that exist in a project but were made elsewhere (gcloud, the
// console, a colleague's script), so status, ssh and exec work on them too.
//
// Each node is recorded under `fleet` with its labels (all but tpufleet's own
// tpufleet-*, so label selectors see what a spec would have given), the fleet key is
// appended to its `ssh-keys` (existing keys are kept, as gcloud does), its workers' host
// keys are pinned from the guest attributes, and the SSH files are rewritten. Nodes
// tpufleet already tracks are skipped. Importing never creates or deletes anything.
//
// Thread-safety: one call at a time per store.
#pragma once

#include <string>
#include <vector>

#include "control/progress.h"
#include "control/up.h"
#include "control/world.h"

namespace tpufleet {

struct ImportRequest {
  std::string provider = "gcp-tpu";   // "gcp-tpu" or "emulator"
  std::string project;
  std::vector<std::string> zones;     // where to look
  std::vector<std::string> nodes;     // empty: every node found
  std::string fleet = "imported";     // the fleet they join
  std::chrono::seconds timeout{std::chrono::minutes(5)};
};

/// One outcome per node adopted (or refused); NotFound when a named node is in none
/// of the zones.
Result<std::vector<NodeOutcome>> Import(World& world, const ImportRequest& request,
                                        ProgressObserver& progress);

}  // namespace tpufleet
