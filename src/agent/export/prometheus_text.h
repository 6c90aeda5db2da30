// The agent's latest sample in Prometheus' text exposition format, version 0.0.4 (what
// `tpufleet-agent serve --prometheus` answers on GET /metrics, metrics_http.h), so a
// Prometheus can scrape every worker of a fleet.
//
// Every metric is a gauge of the latest sample (MetricsReport::sample; the worker's
// idle time from its window). Names and labels:
//   tpufleet_chip_duty_cycle_percent{chip, kind, device, job, user}
//   tpufleet_chip_hbm_used_bytes, _hbm_total_bytes, _hbm_bandwidth_percent,
//     _idle_seconds, _hlo_queue                              (same labels)
//   tpufleet_host_cpus, _cpu_percent, _memory_used_bytes, _memory_total_bytes, _logins,
//     _disk_read_bytes_per_second, _disk_write_bytes_per_second,
//     _net_rx_bytes_per_second, _net_tx_bytes_per_second
//   tpufleet_job_cpu_percent{job, user}, _cpu_limit_percent, _busiest_thread_percent,
//     _memory_bytes
//   tpufleet_worker_idle_seconds: since when nothing used the worker (0 while something
//     does)
// A chip's `job_id` and `user` are its first holder's ("" when no process holds it; a
// Prometheus reads an empty label as no label). Not `job`: Prometheus names the scrape
// job so, and would rename ours to exported_job. A measurement the sample does not have
// (nullopt) is not written at all, never as 0, and a metric with no sample at all has no
// HELP or TYPE line either. No timestamps: Prometheus stamps a scrape itself.
//
// The format's pieces (HELP and TYPE lines, numbers, label values, its Content-Type
// kPrometheusContentType) are util/prometheus_text.h's, shared with serve's /metrics.
//
// Thread-safety: a pure function.
#pragma once

#include <string>
#include <string_view>

#include "core/worker_sample.h"
#include "util/prometheus_text.h"

namespace tpufleet::agent::exporter {

/// The exposition of `report`, as the header says; "" before the first sample (a
/// report whose sample has no time), so no zeros stand in for what was not measured.
std::string PrometheusText(const MetricsReport& report);

}  // namespace tpufleet::agent::exporter
