// `tpufleet top --json`: one metrics round as one document, for scripts. Its shape is
// stable and documented in docs/top.md; keys in alphabetical order, indented by
// two spaces:
//
//   {"time_unix_ms": N,
//    "nodes": [{"name", "verdict", "detail", "worker"?,
//               "workers": [{"worker", "name", "verdict", "detail",
//                            "report"?: the agent's MetricsReport (api/metrics.h),
//                            "error"?: why it did not answer}]}],
//    "jobs":  [{"id", "node", "user", "verdict", "detail", "worker"?, "workers": [N…]}]}
//
// "worker" of a node or job is the straggler's index, written only for a straggler;
// a job's "workers" are the indices of the workers counted in its verdict.
//
// Thread-safety: a pure function.
#pragma once

#include <string>

#include "control/fleet_metrics.h"

namespace tpufleet::cli {

/// The document, without a final newline.
std::string TopJson(const FleetMetrics& fleet);

}  // namespace tpufleet::cli
