// The agent's samples of its worker, as the protocol's `metrics` op carries them
// (docs/agent-protocol.md) and `tpufleet top --json` and the Prometheus text build on.
//
// The agent samples once a second (agent/sampler): each chip's runtime metrics (libtpu's
// RuntimeMetricService, tpu_metrics/), or a GPU's through NVML; who holds each chip; the
// host's CPU, memory, disk and network; each job's CPU. It keeps the last 24 hours
// (HistoryPoint: 1 s apart for the last hour, 10 s apart before) and a summary of the
// last kDiagnosisWindow (WindowSummary) that core/diagnosis.h turns into verdicts.
//
// JSON as in api/agent.h: plain values, keys in alphabetical order, a field whose
// comment says "written only when set" is left out when unset, readers ignore unknown
// fields. A measurement the worker could not take is absent (nullopt), never 0: "no job
// serves runtime metrics" and "the TPU is idle" are different facts.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <string>
#include <string_view>

#include "core/worker_sample.h"
#include "util/status.h"

namespace tpufleet::api {

/// The sample types are core's (core/worker_sample.h), so the agent, core/diagnosis.h
/// and the CLI cannot disagree.
using ::tpufleet::ChipHolder;
using ::tpufleet::ChipSample;
using ::tpufleet::HistoryPoint;
using ::tpufleet::HostSample;
using ::tpufleet::JobSample;
using ::tpufleet::MetricsQuery;
using ::tpufleet::MetricsReport;
using ::tpufleet::WindowSummary;
using ::tpufleet::WorkerSample;

/// JSON objects of the types above (one line, no newline), and back. The Parse functions
/// refuse, with one message naming the field, what is not an object or has a field of
/// the wrong type.
std::string ToJson(const MetricsReport& report);
Result<MetricsReport> ParseMetricsReport(std::string_view json);

}  // namespace tpufleet::api
