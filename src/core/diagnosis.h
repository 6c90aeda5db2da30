// Why a TPU is not busy: the verdicts `top`, `jobs` and `status` show per worker, per
// job and per node, and the rules behind them. The thresholds and their sources
// (SageMaker Debugger's CPU-bottleneck rule, xprof's input-pipeline analysis) are in
// docs/monitoring.md; tests pin each verdict (diagnosis_test.cc).
//
// Two halves: the agent judges each sample (IsInputBoundSample) and summarizes its last
// kDiagnosisWindow (WindowSummary); the CLI turns the summaries of a job's or a
// node's workers into verdicts (DiagnoseWorker, DiagnoseGroup). Pure functions: times
// are Unix milliseconds and `now` is passed in. idle_since comes from the worker's clock:
// pass the worker's own time as `now` (its sample's time_unix_ms; for a group, the
// newest of its workers'), so that a skewed CLI clock does not make a node idle.
//
// Thread-safety: pure functions over values.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/worker_sample.h"

namespace tpufleet {

/// The span each worker's summary covers.
inline constexpr std::chrono::seconds kDiagnosisWindow{60};
/// How long a node must have been unused before it is `idle`, unless told (top
/// --idle-after, serve's idle policy `after`).
inline constexpr std::chrono::minutes kDefaultIdleAfter{10};

// The thresholds, each argued in docs/monitoring.md against its sources (SageMaker
// Debugger's CPU-bottleneck rule, xprof's input-pipeline analysis).

/// A sample's chips are starved below this mean duty cycle: a TPU fed a step at a time
/// by a slow pipeline stays well under it, a healthy one well over.
inline constexpr double kStarvedDutyPercent = 25;
/// The HLO queue is "empty" below this (per chip, summed over its cores): nothing
/// waits to run, so the TPU is not the bottleneck.
inline constexpr double kEmptyHloQueue = 1;
/// The job's host CPU is at its limit from this share of it (all its CPUs, or its
/// busiest thread of one CPU): 1 Hz /proc sampling and a pipeline's own I/O waits keep a
/// saturated job from reading 100.
inline constexpr double kSaturatedCpuPercent = 80;
/// A worker is input-bound when at least this share of its window's samples are.
inline constexpr double kInputBoundFraction = 0.5;
/// Fewer samples than this in a window say nothing (an agent just started, a stalled
/// sampler): the verdict is unknown.
inline constexpr int kMinSamples = 10;
/// A straggler's mean duty cycle is below this share of its group's median…
inline constexpr double kStragglerShare = 0.5;
/// …and the median is at least this, so that a group at rest has no stragglers.
inline constexpr double kStragglerMinMedianPercent = 20;

enum class Verdict {
  kBusy,        // "busy": working as it should
  kInputBound,  // "input-bound": the TPU starves while the job's host CPU is at its limit
  kStraggler,   // "straggler": (a job or node) one worker far less busy than the others
  kIdle,        // "idle": nothing used it for at least idle_after
  kQuiet,       // "quiet": nothing uses it now, for less than idle_after
  kUnknown,     // "unknown": no answer from the worker, or too few samples
};
std::string_view VerdictName(Verdict v);

/// A verdict and the sentence that says it with the numbers: "input-bound: TPU duty
/// cycle 9 %, HLO queue empty, job j7x… host CPU 98 % of its 1 CPU".
struct Diagnosis {
  Verdict verdict = Verdict::kUnknown;
  std::string detail;
  /// The worker the verdict is about: a group's straggler, or its input-bound worker.
  std::optional<int> worker;
};

/// Whether one sample shows a TPU job starved by its host: the chips' mean duty cycle
/// below the input-bound duty threshold, the HLO queue empty, and the job holding the
/// chips at its CPU limit (all of it, or one saturated thread). False when the sample
/// has no runtime metrics or no job holds the chips.
bool IsInputBoundSample(const WorkerSample& sample);

/// The window summary of `samples` (oldest first, the last kDiagnosisWindow of them),
/// `idle_since_unix_ms` as the agent tracked it.
WindowSummary SummarizeWindow(const std::vector<WorkerSample>& samples,
                                   int64_t idle_since_unix_ms);

/// Whether a sample shows the worker in use (what ends an idle stretch): a running job,
/// a login, a chip holder, or a duty cycle above 0.
bool IsInUse(const WorkerSample& sample);

/// One worker's verdict: unknown (fewer than kMinSamples samples), input-bound (at
/// least kInputBoundFraction of the samples were, and the TPU ran something in the
/// window: a job compiling its program starves no TPU), idle (unused for idle_after),
/// quiet (unused for less), else busy. An input-bound worker is never idle.
Diagnosis DiagnoseWorker(const WindowSummary& window, int64_t now_unix_ms,
                         std::chrono::milliseconds idle_after = kDefaultIdleAfter);

/// The verdict of a job or node from its workers' summaries (index = worker; nullopt
/// for a worker that did not answer): a straggler when one worker's mean duty cycle is
/// below kStragglerShare of the group's median (and the median at least
/// kStragglerMinMedianPercent), else input-bound when any worker is, else idle only
/// when every worker answered and is idle, quiet when none is in use, else busy.
/// Unknown when no worker could be judged, or when the rest are unused but a worker did
/// not answer (it may be working: serve's idle policy must not reclaim the node).
Diagnosis DiagnoseGroup(const std::vector<std::optional<WindowSummary>>& workers,
                        int64_t now_unix_ms,
                        std::chrono::milliseconds idle_after = kDefaultIdleAfter);

}  // namespace tpufleet
