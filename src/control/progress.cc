#include "control/progress.h"

namespace tpufleet {

std::string_view NodePhaseName(NodePhase phase) {
  switch (phase) {
    case NodePhase::kChecking: return "checking";
    case NodePhase::kUnchanged: return "unchanged";
    case NodePhase::kCreating: return "creating";
    case NodePhase::kStockout: return "stockout";
    case NodePhase::kQueued: return "queued";
    case NodePhase::kBooting: return "booting";
    case NodePhase::kConnecting: return "connecting";
    case NodePhase::kAgent: return "agent";
    case NodePhase::kSetup: return "setup";
    case NodePhase::kReady: return "ready";
    case NodePhase::kDeleting: return "deleting";
    case NodePhase::kDeleted: return "deleted";
    case NodePhase::kFailed: return "failed";
  }
  return "?";
}

}  // namespace tpufleet
