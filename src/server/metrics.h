// serve's GET /metrics: what the reconciler last published (reconcile/serve_view.h) in
// Prometheus' text format (util/prometheus_text.h), so a Prometheus scrapes the fleets'
// state, their recoveries and their spend:
//   tpufleet_nodes{fleet, state}                  gauge: nodes by state ("RECOVERING"
//                                                 while serve recovers one)
//   tpufleet_preemptions_total                    counter: preemptions (and vanished
//                                                 nodes) detected since serve started
//   tpufleet_recoveries_total                     counter: recoveries finished
//   tpufleet_time_to_recover_seconds              histogram: preempted → recovered
//   tpufleet_spend_usd{fleet}                     gauge: spent today (UTC day)
//   tpufleet_reconcile_pass_seconds               gauge: CPU time of the last pass
//   tpufleet_reconcile_pass_wall_seconds          gauge: its wall time (the waits too)
//   tpufleet_reconcile_passes_total               counter: passes since start
//   tpufleet_api_calls_total                      counter: cloud API calls since start
// Counters count from serve's start (a restart starts them at 0, as Prometheus expects
// of a process's counters).
//
// Thread-safety: a pure function.
#pragma once

#include <string>

#include "reconcile/serve_view.h"

namespace tpufleet::server {

/// The histogram's upper bounds, seconds: a recreate takes from about a minute (a small
/// spot node) to half an hour (a big pod, setup and restore).
inline constexpr double kRecoverBuckets[] = {30, 60, 120, 300, 600, 1200, 1800, 3600};

/// The exposition of `snapshot`, as the header says.
std::string MetricsText(const ServeSnapshot& snapshot);

}  // namespace tpufleet::server
