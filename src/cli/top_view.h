// What `tpufleet top` draws, as pure functions of one metrics round (control/
// fleet_metrics.h) and the view's options: the rows (one per worker, or one per node
// folded), sorted and filtered, laid out as lines of at most a given width, and the
// sentences of the verdicts that are not "busy". The full-screen view (top_screen.h)
// and `--once` print the same lines.
//
// Bars: one cell per chip, ▁▂▃▄▅▆▇█ from 0 to 100 % (a blank for 0, "?" for a chip that
// has no such number: no job serves runtime metrics on it). Sparklines: the same eight
// blocks, one per point of the history the agents sent, oldest first.
//
// Widths count code points: every glyph drawn here is one column wide, and what a worker
// sent (commands, user names) goes through TerminalText first.
//
// Thread-safety: pure functions over values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "control/fleet_metrics.h"

namespace tpufleet::cli {

/// The live view folds a node into one row when it has more workers than this: a v4-32
/// (4 workers) stays one row per worker, a v5e-256 (64) becomes one row.
inline constexpr size_t kFoldAbove = 8;
/// Sparkline points: the last minutes at a glance without crowding out the holder.
inline constexpr size_t kSparkPoints = 20;

enum class TopSort { kName, kDuty, kHbm, kCpu, kVerdict };
/// "name", "duty", "hbm", "cpu", "verdict".
std::string_view TopSortName(TopSort sort);
std::optional<TopSort> TopSortFromName(std::string_view name);
/// The next key in the order above (the live view's `s`).
TopSort NextSort(TopSort sort);

enum class TopFold {
  kNone,   // one row per worker
  kLarge,  // nodes with more than kFoldAbove workers folded (the live view's default)
  kAll,    // one row per node (--fold)
};

struct TopViewOptions {
  TopSort sort = TopSort::kName;  // duty, hbm, cpu: highest first; verdict: worst first
  std::string filter;             // rows whose text has it (any case); "" = all
  TopFold fold = TopFold::kNone;
  bool sparklines = false;        // the DUTY~ and CPU~ columns (history was asked for)
  size_t width = 0;               // columns of the screen; 0 = no limit
};

/// One row: a worker, or a node folded.
struct TopRow {
  std::string node;
  std::string worker;     // "w2"; folded: "4 wkrs"
  int worker_index = 0;   // for sorting by name (folded: 0)
  Verdict verdict = Verdict::kUnknown;
  std::string error;      // the worker did not answer: why ("" when it did)
  std::vector<std::optional<double>> duty;  // per chip, percent (folded: per worker mean)
  std::vector<std::optional<double>> hbm;   // per chip, used of total, percent
  std::optional<double> duty_mean;          // over the chips that have one
  int64_t hbm_used_bytes = 0;               // summed over the chips that report HBM
  int64_t hbm_total_bytes = 0;
  std::optional<double> cpu_percent;        // host CPU, 0–100 (folded: mean)
  int64_t memory_used_bytes = 0;
  int64_t memory_total_bytes = 0;
  std::string holder;     // "pid 42 alice j7abc python3 train.py", "+2 more"; folded: jobs
  std::vector<std::optional<double>> duty_history;  // kSparkPoints at most, oldest first
  std::vector<std::optional<double>> cpu_history;
};

/// The rows of `fleet` as `options` say: built, folded, filtered, sorted (ties by name).
std::vector<TopRow> TopRows(const FleetMetrics& fleet, const TopViewOptions& options);

/// The header line and one line per row, each at most options.width columns, no
/// trailing blanks: on a narrow screen the sparklines shrink (to 6 points at least),
/// then go, before the holder (the last column) is cut to fit.
std::vector<std::string> RenderTopTable(const std::vector<TopRow>& rows,
                                        const TopViewOptions& options);

/// A line for each job, node and worker whose verdict is not busy, quiet or unknown for
/// want of samples: "job j7abc (pod): straggler: …", "pod/w2: input-bound: …"; then one
/// for each worker that did not answer.
std::vector<std::string> RenderVerdictLines(const FleetMetrics& fleet);

/// One cell per value: ▁…█ by percent (0–100, clamped), " " for 0, `missing` for nullopt
/// ("?" in a bar: the chip has no such number; " " in a sparkline: a gap).
std::string Blocks(const std::vector<std::optional<double>>& percents,
                   std::string_view missing = "?");
/// `values` (oldest first) as at most `points` cells: each cell the mean of its share of
/// the values (nullopt when none of them has one, drawn " ").
std::vector<std::optional<double>> Resample(const std::vector<std::optional<double>>& values,
                                            size_t points);
/// Code points in `text` (the columns it takes, for what is drawn here).
size_t DisplayWidth(std::string_view text);
/// `text` cut to `width` columns (a cut ends in "…"), never inside a UTF-8 sequence.
std::string FitWidth(std::string_view text, size_t width);

}  // namespace tpufleet::cli
