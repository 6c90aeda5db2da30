// What `up` (and `down`) report while they work: one call per change of a node's phase,
// for the CLI to draw as a live line per node on a terminal or as plain lines otherwise.
//
// Thread-safety: OnProgress is called from the threads working on nodes, concurrently;
// implementations lock.
#pragma once

#include <string>
#include <string_view>

namespace tpufleet {

enum class NodePhase {
  kChecking,    // reading the cloud's view
  kUnchanged,   // exists and matches the spec: nothing to do
  kCreating,    // create requested in `zone`; waiting for the operation
  kStockout,    // `zone` had no capacity; moving on
  kQueued,      // queued resource waiting for capacity
  kBooting,     // node exists, waiting for READY and host keys
  kConnecting,  // waiting for SSH on every worker
  kAgent,       // checking the node agent, installing it, making the spec's accounts
  kSetup,       // running the spec's setup script
  kReady,       // every worker READY, answering SSH, set up
  kDeleting,    // delete requested
  kDeleted,
  kFailed,      // `detail` says why
};

std::string_view NodePhaseName(NodePhase phase);

struct NodeProgress {
  std::string node;
  NodePhase phase = NodePhase::kChecking;
  std::string zone;
  std::string detail;  // "2/4 workers", the error message, …
};

class ProgressObserver {
 public:
  virtual ~ProgressObserver() = default;
  virtual void OnProgress(const NodeProgress& progress) = 0;
};

}  // namespace tpufleet
