// The wire type of `tpufleet doctor --json`: every worker's checks, the CLI's own (the
// agent answers, at the CLI's version, the clock) and the agent's (devices, TPU use,
// metadata, free space), each an api::DoctorCheck of the agent's protocol.
//
// Plain values, as in api/workers.h; keys in alphabetical order. ToJson never throws.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "api/agent.h"

namespace tpufleet::api {

/// One worker: {"worker", "node", "index", "ok", "checks"}; checks in the order the
/// lines print them: the CLI's, then the agent's.
struct DoctorWorker {
  std::string worker;  // "pod/w3"
  std::string node;
  int index = 0;
  bool ok = false;  // every check passed
  std::vector<DoctorCheck> checks;
};

/// `doctor`: {"workers", "ok", "failed"}: failing workers first.
struct DoctorSummary {
  std::vector<DoctorWorker> workers;
  bool ok = false;
  size_t failed = 0;  // workers with a failed check
};

/// The document, indented by two spaces, without a final newline.
std::string ToJson(const DoctorSummary& summary);

}  // namespace tpufleet::api
