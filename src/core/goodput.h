// Goodput: where the paid time went (issue 17). The ledger's shares (core/spend_report.h)
// of each job, node or person are split into
//   - busy: the TPUs' duty cycle, as the agents measured it;
//   - preempted: lost between a preemption and the job resuming (serve's events);
//   - idle: what the agents measured of a node no job ran on and that was not busy, or
//     of a job's time when they said nothing used the node;
//   - input-bound: the TPUs starved by the job's input pipeline (core/diagnosis.h);
//   - other: the rest of what the agents measured of a job's time (compiling,
//     checkpointing, a TPU barely used);
//   - unmeasured: a job's time no agent's numbers cover (an agent that did not answer,
//     serve not running, or the time since serve's last metrics round);
// and a one-line verdict says where most of the money went.
//
// The agents' part comes from serve's metrics rounds, folded per node and UTC hour into
// usage rows (UsageRecord, store table node_usage): MeasureUsage makes the rows of one
// round. A row counts to the shares of its node in its hour that ran its job (all the
// node's shares there when none did), in proportion to their time in the hour.
//
// Thread-safety: pure functions over values.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/catalog.h"
#include "core/node_record.h"
#include "core/spend_report.h"
#include "core/worker_sample.h"
#include "util/clock.h"

namespace tpufleet {

/// A node's time between a preemption and its job resuming (or the node being back
/// with no job to resume): read from serve's events (preempted, job-resumed, recovered).
struct PreemptionGap {
  std::string fleet, node;
  Clock::WallTime start{};
  std::optional<Clock::WallTime> end;  // nullopt: not resumed yet
};

/// The usage rows of one node for [from, now) from its workers' window summaries
/// (nullopt: the worker's agent did not answer; no row when none did): the means over
/// the answering workers of the duty cycle, the input-bound share and the time since
/// each was idle, cut at UTC hours. `job` is the job most workers saw holding the chips.
std::vector<UsageRecord> MeasureUsage(const std::string& fleet, const std::string& node,
                                      const std::vector<std::optional<WindowSummary>>& workers,
                                      Clock::WallTime from, Clock::WallTime now);

/// Where some paid time went, as node-hours or as US dollars; the parts add up to it.
struct GoodputSplit {
  double busy = 0, preempted = 0, idle = 0, input_bound = 0, other = 0, unmeasured = 0;
  double Sum() const { return busy + preempted + idle + input_bound + other + unmeasured; }
};

struct GoodputLine {
  std::string key;         // as SpendLine's
  std::string job_id{}, job_name{};  // by job: as SpendLine's
  double usd = 0;          // spent within the span
  double node_hours = 0;   // paid, a job's share of them
  double chip_hours = 0;   // node_hours times the chips of the node's type
  GoodputSplit hours;      // node_hours, split
  GoodputSplit usd_split;  // usd, split
};

struct GoodputReport {
  Clock::WallTime from{}, now{};
  std::vector<GoodputLine> lines;  // most spent first, then by key
  GoodputLine total;               // key "TOTAL"
  /// "41 % of the spend was idle TPUs, mostly on node lab/eval-3", and the largest
  /// loss when busy TPUs had the most ("of the node-hours" when nothing was spent); ""
  /// when no node-hour was paid.
  std::string verdict;
};

/// The goodput within [from, now) of the shares `shown` keeps (all of them when empty),
/// one line per key of `by` that spent something, with the usage rows and preemption
/// gaps of their nodes. Rows are matched against all of `shares`, whatever the span and
/// `shown` (a row of a job the caller may not see stays that job's). `catalog` gives
/// each type's chips (a type it does not know counts as one chip). Lines that cost
/// nothing (reserved capacity) are split by node-hours, as is the verdict when nothing
/// was spent.
/// REQUIRES: from <= now.
GoodputReport ReportGoodput(const std::vector<SpendShare>& shares,
                            const std::vector<UsageRecord>& usage,
                            const std::vector<PreemptionGap>& gaps, const Catalog& catalog,
                            SpendGrouping by, Clock::WallTime from, Clock::WallTime now,
                            const std::function<bool(const SpendShare&)>& shown = {});

}  // namespace tpufleet
