#include "cli/top_view.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "util/log.h"
#include "util/strings.h"

namespace tpufleet::cli {
namespace {

constexpr std::array<std::string_view, 5> kSortNames = {"name", "duty", "hbm", "cpu", "verdict"};
constexpr std::array<std::string_view, 8> kBlocks = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
constexpr std::string_view kGap = "  ";
// A narrow screen keeps this much of the holder before it gives up the sparklines,
// which are worth drawing down to this many points.
constexpr size_t kMinHolderColumns = 12;
constexpr size_t kMinSparkPoints = 6;

// Worst first: what needs a person's eyes tops the list.
int Severity(Verdict v) {
  switch (v) {
    case Verdict::kInputBound: return 0;
    case Verdict::kStraggler: return 1;
    case Verdict::kUnknown: return 2;
    case Verdict::kIdle: return 3;
    case Verdict::kQuiet: return 4;
    case Verdict::kBusy: return 5;
  }
  return 5;
}

std::optional<double> Mean(const std::vector<std::optional<double>>& values) {
  double sum = 0;
  int n = 0;
  for (const std::optional<double>& v : values) {
    if (v.has_value()) {
      sum += *v;
      ++n;
    }
  }
  return n == 0 ? std::nullopt : std::optional<double>(sum / n);
}

std::optional<double> Percent(int64_t part, int64_t whole) {
  return whole > 0 ? std::optional<double>(100.0 * static_cast<double>(part) /
                                           static_cast<double>(whole))
                   : std::nullopt;
}

// "7.5" or "32": GiB with one decimal below 10.
std::string Gib(int64_t bytes) {
  double g = static_cast<double>(bytes) / (1024.0 * 1024 * 1024);
  char buf[32];
  std::snprintf(buf, sizeof buf, g < 10 ? "%.1f" : "%.0f", g);
  return buf;
}

std::string UsedOfTotal(int64_t used, int64_t total) {
  return total > 0 ? Gib(used) + "/" + Gib(total) + "G" : "-";
}

std::string PercentText(const std::optional<double>& p) {
  return p.has_value() ? std::to_string(static_cast<int>(std::lround(*p))) + "%" : "-";
}

// The holders of the worker's chips, each process once: the first in full, then how many
// more.
std::string HolderText(const WorkerSample& s) {
  std::vector<const ChipHolder*> holders;
  std::set<int> seen;
  for (const ChipSample& c : s.chips) {
    for (const ChipHolder& h : c.holders) {
      if (seen.insert(h.pid).second) {
        holders.push_back(&h);
      }
    }
  }
  if (holders.empty()) {
    return "-";
  }
  const ChipHolder& h = *holders[0];
  std::string text = "pid " + std::to_string(h.pid) + " " + h.user +
                     (h.job.empty() ? "" : " " + h.job) + " " + h.command;
  if (holders.size() > 1) {
    text += " +" + std::to_string(holders.size() - 1) + " more";
  }
  return TerminalText(text, false);
}

TopRow WorkerRow(const WorkerMetrics& w) {
  TopRow row;
  row.node = w.target.node;
  row.worker = "w" + std::to_string(w.target.worker);
  row.worker_index = w.target.worker;
  row.verdict = w.diagnosis.verdict;
  if (!w.report.has_value()) {
    row.error = TerminalText(w.status.message(), false);
    return row;
  }
  const WorkerSample& s = w.report->sample;
  for (const ChipSample& c : s.chips) {
    row.duty.push_back(c.duty_cycle_percent);
    std::optional<double> hbm;
    if (c.hbm_used_bytes && c.hbm_total_bytes) {
      hbm = Percent(*c.hbm_used_bytes, *c.hbm_total_bytes);
      row.hbm_used_bytes += *c.hbm_used_bytes;
      row.hbm_total_bytes += *c.hbm_total_bytes;
    }
    row.hbm.push_back(hbm);
  }
  row.duty_mean = Mean(row.duty);
  row.cpu_percent = s.host.cpu_percent;
  row.memory_used_bytes = s.host.memory_used_bytes;
  row.memory_total_bytes = s.host.memory_total_bytes;
  row.holder = HolderText(s);
  std::vector<std::optional<double>> duty;
  std::vector<std::optional<double>> cpu;
  for (const HistoryPoint& p : w.report->history) {
    duty.push_back(p.duty_cycle_percent);
    cpu.push_back(p.cpu_percent);
  }
  row.duty_history = Resample(duty, kSparkPoints);
  row.cpu_history = Resample(cpu, kSparkPoints);
  return row;
}

// The mean, point by point aligned at the newest, of some rows' histories.
std::vector<std::optional<double>> MeanHistory(
    const std::vector<const std::vector<std::optional<double>>*>& histories) {
  size_t n = 0;
  for (const auto* h : histories) {
    n = std::max(n, h->size());
  }
  std::vector<std::optional<double>> out(n);
  for (size_t k = 0; k < n; ++k) {
    std::vector<std::optional<double>> at;
    for (const auto* h : histories) {
      if (k + h->size() >= n) {
        at.push_back((*h)[k + h->size() - n]);
      }
    }
    out[k] = Mean(at);
  }
  return out;
}

TopRow NodeRow(const FleetMetrics& fleet, const GroupMetrics& node,
               const std::vector<TopRow>& workers) {
  TopRow row;
  row.node = node.name;
  row.worker = std::to_string(workers.size()) + " wkrs";
  row.verdict = node.diagnosis.verdict;
  std::vector<std::optional<double>> cpus;
  std::vector<const std::vector<std::optional<double>>*> duty_h;
  std::vector<const std::vector<std::optional<double>>*> cpu_h;
  for (const TopRow& w : workers) {
    row.duty.push_back(w.duty_mean);
    row.hbm.push_back(Percent(w.hbm_used_bytes, w.hbm_total_bytes));
    row.hbm_used_bytes += w.hbm_used_bytes;
    row.hbm_total_bytes += w.hbm_total_bytes;
    cpus.push_back(w.cpu_percent);
    row.memory_used_bytes += w.memory_used_bytes;
    row.memory_total_bytes += w.memory_total_bytes;
    duty_h.push_back(&w.duty_history);
    cpu_h.push_back(&w.cpu_history);
  }
  row.duty_mean = Mean(row.duty);
  row.cpu_percent = Mean(cpus);
  row.duty_history = MeanHistory(duty_h);
  row.cpu_history = MeanHistory(cpu_h);
  std::vector<std::string> jobs;
  for (const GroupMetrics& j : fleet.jobs) {
    if (j.node == node.name) {
      jobs.push_back(j.name + (j.user.empty() ? "" : " (" + j.user + ")"));
    }
  }
  row.holder = jobs.empty() ? "-" : TerminalText("jobs: " + Join(jobs, ", "), false);
  size_t answered = 0;
  for (const TopRow& w : workers) {
    answered += w.error.empty() ? 1 : 0;
  }
  if (answered == 0 && !workers.empty()) {
    row.error = workers[0].error;
  } else if (answered < workers.size()) {
    row.holder = std::to_string(workers.size() - answered) + " not answering; " + row.holder;
  }
  return row;
}

std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool Matches(const TopRow& row, const std::string& filter) {
  if (filter.empty()) {
    return true;
  }
  std::string text = row.node + "/" + row.worker + " " + std::string(VerdictName(row.verdict)) +
                     " " + row.holder + " " + row.error;
  return Lower(text).find(Lower(filter)) != std::string::npos;
}

// Sorts highest first by `key`, rows without a value last.
template <typename Key>
bool HigherFirst(const TopRow& a, const TopRow& b, Key key) {
  std::optional<double> x = key(a);
  std::optional<double> y = key(b);
  if (x.has_value() != y.has_value()) {
    return x.has_value();
  }
  return x.has_value() && *x > *y;
}

bool Before(const TopRow& a, const TopRow& b, TopSort sort) {
  switch (sort) {
    case TopSort::kName:
      return false;
    case TopSort::kDuty:
      return HigherFirst(a, b, [](const TopRow& r) { return r.duty_mean; });
    case TopSort::kHbm:
      return HigherFirst(a, b, [](const TopRow& r) {
        return Percent(r.hbm_used_bytes, r.hbm_total_bytes);
      });
    case TopSort::kCpu:
      return HigherFirst(a, b, [](const TopRow& r) { return r.cpu_percent; });
    case TopSort::kVerdict:
      return Severity(a.verdict) < Severity(b.verdict);
  }
  return false;
}

// `spark_points`: cells per sparkline; 0 = none.
std::vector<std::string> Cells(const TopRow& r, size_t spark_points) {
  if (!r.error.empty()) {
    return {r.node, r.worker, std::string(VerdictName(r.verdict)), "no answer: " + r.error};
  }
  std::vector<std::string> cells = {
      r.node,
      r.worker,
      std::string(VerdictName(r.verdict)),
      Blocks(r.duty) + " " + PercentText(r.duty_mean),
      Blocks(r.hbm) + " " + UsedOfTotal(r.hbm_used_bytes, r.hbm_total_bytes),
      PercentText(r.cpu_percent),
      UsedOfTotal(r.memory_used_bytes, r.memory_total_bytes)};
  if (spark_points > 0) {
    cells.push_back(Blocks(Resample(r.duty_history, spark_points), " "));
    cells.push_back(Blocks(Resample(r.cpu_history, spark_points), " "));
  }
  cells.push_back(r.holder);
  return cells;
}

// The lines of `table` in columns; the last column takes what the others leave.
std::vector<std::string> Layout(const std::vector<std::vector<std::string>>& table, size_t width) {
  std::vector<size_t> widths;
  for (const auto& row : table) {
    // A row of an unanswered worker spans from its fourth cell on: it sets no widths there.
    size_t n = row.size() == 4 && table[0].size() > 4 ? 3 : row.size();
    widths.resize(std::max(widths.size(), n));
    for (size_t i = 0; i < n; ++i) {
      widths[i] = std::max(widths[i], DisplayWidth(row[i]));
    }
  }
  std::vector<std::string> lines;
  for (const auto& row : table) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) {
        line += std::string(widths[i] - std::min(widths[i], DisplayWidth(row[i])), ' ');
        line += kGap;
      }
    }
    while (!line.empty() && line.back() == ' ') {
      line.pop_back();
    }
    lines.push_back(width == 0 ? line : FitWidth(line, width));
  }
  return lines;
}

}  // namespace

std::string_view TopSortName(TopSort sort) { return kSortNames[static_cast<size_t>(sort)]; }

std::optional<TopSort> TopSortFromName(std::string_view name) {
  for (size_t i = 0; i < kSortNames.size(); ++i) {
    if (kSortNames[i] == name) {
      return static_cast<TopSort>(i);
    }
  }
  return std::nullopt;
}

TopSort NextSort(TopSort sort) {
  return static_cast<TopSort>((static_cast<size_t>(sort) + 1) % kSortNames.size());
}

std::vector<TopRow> TopRows(const FleetMetrics& fleet, const TopViewOptions& options) {
  std::vector<TopRow> rows;
  for (const GroupMetrics& node : fleet.nodes) {
    std::vector<TopRow> workers;
    for (size_t i : node.workers) {
      workers.push_back(WorkerRow(fleet.workers[i]));
    }
    bool fold = options.fold == TopFold::kAll ||
                (options.fold == TopFold::kLarge && workers.size() > kFoldAbove);
    if (fold) {
      rows.push_back(NodeRow(fleet, node, workers));
    } else {
      rows.insert(rows.end(), workers.begin(), workers.end());
    }
  }
  std::erase_if(rows, [&](const TopRow& r) { return !Matches(r, options.filter); });
  std::stable_sort(rows.begin(), rows.end(), [&](const TopRow& a, const TopRow& b) {
    if (Before(a, b, options.sort) || Before(b, a, options.sort)) {
      return Before(a, b, options.sort);
    }
    return std::tie(a.node, a.worker_index) < std::tie(b.node, b.worker_index);
  });
  return rows;
}

std::vector<std::string> RenderTopTable(const std::vector<TopRow>& rows,
                                        const TopViewOptions& options) {
  auto table_of = [&](size_t spark_points) {
    std::vector<std::vector<std::string>> table;
    table.push_back({"NODE", "WORKER", "VERDICT", "DUTY", "HBM", "CPU", "MEM"});
    if (spark_points > 0) {
      table[0].push_back("DUTY~");
      table[0].push_back("CPU~");
    }
    table[0].push_back("HOLDER");
    for (const TopRow& r : rows) {
      table.push_back(Cells(r, spark_points));
    }
    return table;
  };
  size_t points = options.sparklines ? kSparkPoints : 0;
  std::vector<std::vector<std::string>> table = table_of(points);
  if (options.width == 0) {
    return Layout(table, 0);
  }
  // On a narrow screen the sparklines shrink, then go, before the holder has fewer than
  // kMinHolderColumns.
  if (points > 0) {
    std::string header = Layout(table, 0)[0];
    size_t need = DisplayWidth(header) - DisplayWidth("HOLDER") + kMinHolderColumns;
    size_t over = need > options.width ? need - options.width : 0;
    size_t shrink = (over + 1) / 2;  // each of the two sparklines gives half
    points = shrink + kMinSparkPoints <= points ? points - shrink : 0;
    if (over > 0) {
      table = table_of(points);
    }
  }
  return Layout(table, options.width);
}

std::vector<std::string> RenderVerdictLines(const FleetMetrics& fleet) {
  auto text = [](const Diagnosis& d) {
    return TerminalText(d.detail.empty() ? std::string(VerdictName(d.verdict)) : d.detail, false);
  };
  std::vector<std::string> lines;
  for (const GroupMetrics& j : fleet.jobs) {
    if (j.diagnosis.verdict != Verdict::kBusy && j.diagnosis.verdict != Verdict::kQuiet &&
        j.diagnosis.verdict != Verdict::kUnknown) {
      lines.push_back("job " + j.name + " (" + j.node + "): " + text(j.diagnosis));
    }
  }
  for (const GroupMetrics& n : fleet.nodes) {
    if (n.diagnosis.verdict == Verdict::kIdle) {
      lines.push_back("node " + n.name + ": " + text(n.diagnosis));
    }
  }
  for (const WorkerMetrics& w : fleet.workers) {
    if (w.report.has_value() && w.diagnosis.verdict == Verdict::kInputBound) {
      lines.push_back(w.target.name + ": " + text(w.diagnosis));
    }
  }
  for (const WorkerMetrics& w : fleet.workers) {
    if (!w.report.has_value()) {
      lines.push_back(w.target.name + ": no answer: " + TerminalText(w.status.message(), false));
    }
  }
  return lines;
}

std::string Blocks(const std::vector<std::optional<double>>& percents, std::string_view missing) {
  std::string out;
  for (const std::optional<double>& p : percents) {
    if (!p.has_value()) {
      out += missing;
    } else if (*p <= 0) {
      out += " ";
    } else {
      double clamped = std::min(100.0, *p);
      size_t level = static_cast<size_t>(std::ceil(clamped / 100.0 * 8)) - 1;
      out += kBlocks[std::min<size_t>(level, 7)];
    }
  }
  return out;
}

std::vector<std::optional<double>> Resample(const std::vector<std::optional<double>>& values,
                                            size_t points) {
  if (values.size() <= points || points == 0) {
    return values;
  }
  std::vector<std::optional<double>> out;
  for (size_t k = 0; k < points; ++k) {
    size_t from = k * values.size() / points;
    size_t to = (k + 1) * values.size() / points;
    out.push_back(Mean({values.begin() + static_cast<std::ptrdiff_t>(from),
                        values.begin() + static_cast<std::ptrdiff_t>(to)}));
  }
  return out;
}

size_t DisplayWidth(std::string_view text) {
  size_t n = 0;
  for (unsigned char c : text) {
    n += (c & 0xC0) != 0x80 ? 1 : 0;
  }
  return n;
}

std::string FitWidth(std::string_view text, size_t width) {
  if (DisplayWidth(text) <= width) {
    return std::string(text);
  }
  if (width == 0) {
    return "";
  }
  std::string out;
  size_t n = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c & 0xC0) != 0x80) {
      if (n == width - 1) {
        break;
      }
      ++n;
    }
    out += text[i];
  }
  return out + "…";
}

}  // namespace tpufleet::cli
