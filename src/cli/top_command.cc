// `tpufleet top`: the accelerators of a target's workers, their holders and hosts, and
// why a TPU is not busy (control/fleet_metrics.h), as one snapshot (--once: a table, or
// --json) or as the live full-screen view (top_screen.h).
#include <unistd.h>

#include <algorithm>
#include <ostream>

#include "cli/command.h"
#include "cli/fleet_world.h"
#include "cli/top_json.h"
#include "cli/top_screen.h"
#include "cli/top_view.h"
#include "control/fleet_metrics.h"
#include "control/job_access.h"
#include "control/targets.h"
#include "util/strings.h"

namespace tpufleet::cli {
namespace {

// What the live view shows of the past without --since: the last minutes, as the
// sparklines' points (the agents keep 1 s points for the last hour).
constexpr std::chrono::seconds kLiveHistory{300};
// Between rounds of the live view, unless --refresh says: htop's and nvtop's pace.
constexpr double kDefaultRefreshSeconds = 2;

// The flags, checked; nullopt when one is bad (the error printed).
struct TopFlags {
  TopViewOptions view;
  MetricsOptions metrics;
  std::chrono::milliseconds refresh{0};
  bool once = false;
};

std::optional<TopFlags> ParseFlags(Invocation& inv) {
  TopFlags f;
  f.once = inv.args.Has("once") || inv.json;
  if (std::optional<std::string> sort = inv.args.Get("sort")) {
    std::optional<TopSort> s = TopSortFromName(*sort);
    if (!s.has_value()) {
      UsageError(inv, "--sort takes name, duty, hbm, cpu or verdict, not \"" + *sort + "\"");
      return std::nullopt;
    }
    f.view.sort = *s;
  }
  f.view.filter = inv.args.Get("filter").value_or("");
  f.view.fold = inv.args.Has("fold") ? TopFold::kAll : f.once ? TopFold::kNone : TopFold::kLarge;
  std::optional<std::chrono::seconds> since = DurationFlag(inv, "since", kLiveHistory);
  std::optional<std::chrono::seconds> idle_after = DurationFlag(
      inv, "idle-after", std::chrono::duration_cast<std::chrono::seconds>(kDefaultIdleAfter));
  std::optional<double> refresh = NumberFlag(inv, "refresh", kDefaultRefreshSeconds, 0.2, 3600);
  if (!since || !idle_after || !refresh) {
    return std::nullopt;
  }
  if (since->count() > kMaxHistorySeconds) {
    UsageError(inv, "--since goes back at most 24h (what the agents keep), not " +
                        FormatDuration(*since));
    return std::nullopt;
  }
  f.view.sparklines = inv.args.Has("since") || !f.once;
  if (f.view.sparklines) {
    f.metrics.query.history_seconds = static_cast<int>(since->count());
    f.metrics.query.step_seconds = std::clamp(
        static_cast<int>(since->count() / static_cast<long>(kSparkPoints)), 1, kMaxStepSeconds);
  }
  f.metrics.idle_after = *idle_after;
  f.refresh = std::chrono::milliseconds(static_cast<int64_t>(*refresh * 1000));
  return f;
}

ExitStatus PrintOnce(Invocation& inv, const FleetMetrics& fleet, const TopViewOptions& view) {
  bool all_answered = true;
  for (const WorkerMetrics& w : fleet.workers) {
    all_answered = all_answered && w.report.has_value();
  }
  if (inv.json) {
    inv.out << TopJson(fleet) << "\n";
  } else {
    TopViewOptions fitted = view;
    fitted.width = inv.terminal.out_is_terminal ? TerminalColumns(STDOUT_FILENO) : 0;
    std::vector<std::string> lines = RenderTopTable(TopRows(fleet, fitted), fitted);
    for (const std::string& line : lines) {
      inv.out << line << "\n";
    }
    std::vector<std::string> verdicts = RenderVerdictLines(fleet);
    if (!verdicts.empty()) {
      inv.out << "\n";
    }
    for (const std::string& line : verdicts) {
      inv.out << line << "\n";
    }
  }
  return all_answered ? ExitStatus::kOk : ExitStatus::kFailure;
}

}  // namespace

ExitStatus RunTop(Invocation& inv) {
  std::optional<TopFlags> flags = ParseFlags(inv);
  if (!flags) {
    return ExitStatus::kUsage;
  }
  bool terminal = inv.terminal.out_is_terminal && inv.terminal.in != nullptr;
  if (!flags->once && inv.served) {
    return UsageError(inv, "top's live view does not go through a team server (it draws the "
                           "whole screen): `top --once` prints one snapshot (--json for "
                           "scripts)");
  }
  if (!flags->once && !terminal) {
    return Fail(inv, FailedPreconditionError(
                         "top's live view needs a terminal; `tpufleet top --once` prints one "
                         "snapshot (--json for scripts)"));
  }
  Result<std::unique_ptr<WorldHandle>> handle = OpenWorld(inv, false);
  if (!handle.ok()) {
    return Fail(inv, handle.status());
  }
  World& world = (*handle)->world();
  const std::vector<std::string>& words = inv.args.positional;
  // A team server's caller sees the nodes they may see, and of their holders and jobs
  // their own (an admin of the fleet: all).
  Result<std::vector<WorkerTarget>> workers = VisibleTargets(world, words, inv.access);
  if (!workers.ok()) {
    return Fail(inv, workers.status());
  }
  if (flags->once) {
    Result<FleetMetrics> fleet = SampleFleet(world, *workers, flags->metrics);
    if (!fleet.ok()) {
      return Fail(inv, fleet.status());
    }
    return PrintOnce(inv, VisibleMetrics(*std::move(fleet), inv.access, flags->metrics.idle_after),
                     flags->view);
  }
  TopState state;
  state.view = flags->view;
  inv.out.flush();
  Status s = RunTopScreen(STDIN_FILENO, STDOUT_FILENO, words.empty() ? "all" : Join(words, " "),
                          state, flags->refresh, [&](const AgentCancelFn& cancelled) {
                            return SampleFleet(world, *workers, flags->metrics, cancelled);
                          });
  return s.ok() ? ExitStatus::kOk : Fail(inv, s);
}

}  // namespace tpufleet::cli
