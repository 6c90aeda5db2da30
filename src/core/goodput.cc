#include "core/goodput.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <map>
#include <utility>

namespace tpufleet {
namespace {

using Seconds = std::chrono::duration<double>;

// The longest job id a usage row keeps (tpufleet's are 8 characters).
constexpr size_t kMaxJobIdBytes = 64;

double SecondsOf(Clock::WallTime::duration d) {
  return Seconds(d).count();
}

// The length of [a0, a1) ∩ [b0, b1), in seconds.
double Overlap(Clock::WallTime a0, Clock::WallTime a1, Clock::WallTime b0, Clock::WallTime b1) {
  Clock::WallTime lo = std::max(a0, b0);
  Clock::WallTime hi = std::min(a1, b1);
  return hi > lo ? SecondsOf(hi - lo) : 0;
}

// A share as the report counts it: within the span, with what the usage rows and the
// gaps give it, in node-seconds (its fraction of its node's time).
struct Counted {
  const SpendShare* share = nullptr;
  Clock::WallTime start{}, end{};  // the part within [from, now); empty when outside it
  Clock::WallTime whole_end{};     // the part's own end (now when open)
  bool shown = true;               // a line counts it
  double measured = 0, busy = 0, input_bound = 0, idle = 0, preempted = 0;
};

struct Category {
  double GoodputSplit::*part;
  const char* what;
};
constexpr std::array<Category, 6> kCategories = {{
    {&GoodputSplit::busy, "busy TPUs"},
    {&GoodputSplit::preempted, "lost to preemption"},
    {&GoodputSplit::idle, "idle TPUs"},
    {&GoodputSplit::input_bound, "TPUs starved by the input pipeline"},
    {&GoodputSplit::other, "jobs' other time (compiling, checkpointing, TPUs barely used)"},
    {&GoodputSplit::unmeasured,
     "unmeasured (no agent answered, or since serve's last metrics round)"},
}};

// What the verdict weighs: the dollars, or the node-hours when nothing was spent
// (reserved capacity costs nothing, but its hours still went somewhere).
const GoodputSplit& Weighed(const GoodputLine& l, bool by_usd) {
  return by_usd ? l.usd_split : l.hours;
}

// "41 % of the spend was idle TPUs, mostly on node lab/eval-3"
std::string Said(const Category& c, const GoodputReport& r, SpendGrouping by) {
  bool by_usd = r.total.usd > 0;
  const GoodputLine* most = nullptr;
  for (const GoodputLine& l : r.lines) {
    if (most == nullptr || Weighed(l, by_usd).*c.part > Weighed(*most, by_usd).*c.part) {
      most = &l;
    }
  }
  double whole = by_usd ? r.total.usd : r.total.node_hours;
  double percent = 100 * Weighed(r.total, by_usd).*c.part / whole;
  std::string out = std::to_string(static_cast<int>(std::lround(percent))) +
                    (by_usd ? " % of the spend was " : " % of the node-hours were ") + c.what;
  if (most != nullptr && r.lines.size() > 1) {
    out += by == SpendGrouping::kJob && most->key.empty()
               ? ", mostly where no job ran"
               : ", mostly on " + std::string(SpendGroupingName(by)) + " " +
                     ShownSpendKey(most->key, by);
  }
  return out;
}

std::string Verdict(const GoodputReport& r, SpendGrouping by) {
  if (r.total.node_hours <= 0) {
    return "";
  }
  bool by_usd = r.total.usd > 0;
  const GoodputSplit& total = Weighed(r.total, by_usd);
  auto largest = [&](size_t from) {
    size_t best = from;
    for (size_t i = from; i < kCategories.size(); ++i) {
      if (total.*kCategories[i].part > total.*kCategories[best].part) {
        best = i;
      }
    }
    return best;
  };
  size_t top = largest(0);
  std::string out = Said(kCategories[top], r, by);
  // Mostly busy: the loss worth chasing is said too, when it is not a rounding's worth.
  constexpr double kLossWorthSaying = 0.05;
  if (top == 0) {
    size_t loss = largest(1);
    if (total.*kCategories[loss].part >= kLossWorthSaying * total.Sum()) {
      out += "; the largest loss: " + Said(kCategories[loss], r, by);
    }
  }
  return out + ".";
}

void Add(GoodputLine& to, const GoodputLine& part) {
  to.usd += part.usd;
  to.node_hours += part.node_hours;
  to.chip_hours += part.chip_hours;
  for (const Category& c : kCategories) {
    to.hours.*c.part += part.hours.*c.part;
    to.usd_split.*c.part += part.usd_split.*c.part;
  }
}

Clock::WallTime UtcHourStart(Clock::WallTime t) {
  return std::chrono::floor<std::chrono::hours>(t);
}

}  // namespace

std::vector<UsageRecord> MeasureUsage(const std::string& fleet, const std::string& node,
                                      const std::vector<std::optional<WindowSummary>>& workers,
                                      Clock::WallTime from, Clock::WallTime now) {
  double span = SecondsOf(now - from);
  double answering = 0, busy = 0, input = 0, idle = 0;
  std::map<std::string, int> jobs;
  for (const std::optional<WindowSummary>& w : workers) {
    if (!w) {
      continue;
    }
    answering += 1;
    double b = std::clamp(w->duty_cycle_percent.value_or(0) / 100, 0.0, 1.0);
    double i = std::clamp(w->input_bound_fraction, 0.0, 1.0 - b);
    double d = 0;
    if (w->idle_since_unix_ms > 0 && span > 0) {
      Clock::WallTime since{std::chrono::milliseconds(w->idle_since_unix_ms)};
      d = Overlap(since, now, from, now) / span;
    }
    busy += b;
    input += i;
    idle += std::clamp(d, 0.0, 1.0 - b - i);
    if (!w->job.empty() && w->job.size() <= kMaxJobIdBytes) {  // a worker's word, bounded
      ++jobs[w->job];
    }
  }
  std::vector<UsageRecord> out;
  if (answering == 0 || span <= 0) {
    return out;
  }
  std::string job;
  int seen = 0;
  for (const auto& [id, n] : jobs) {
    if (n > seen) {
      job = id;
      seen = n;
    }
  }
  for (Clock::WallTime a = from; a < now;) {
    Clock::WallTime hour = UtcHourStart(a);
    Clock::WallTime b = std::min(now, hour + std::chrono::hours(1));
    double s = SecondsOf(b - a);
    out.push_back(UsageRecord{fleet, node, job, hour, s, s * busy / answering,
                              s * input / answering, s * idle / answering, b});
    a = b;
  }
  return out;
}

GoodputReport ReportGoodput(const std::vector<SpendShare>& shares,
                            const std::vector<UsageRecord>& usage,
                            const std::vector<PreemptionGap>& gaps, const Catalog& catalog,
                            SpendGrouping by, Clock::WallTime from, Clock::WallTime now,
                            const std::function<bool(const SpendShare&)>& shown) {
  GoodputReport r;
  r.from = from;
  r.now = now;
  r.total.key = "TOTAL";
  // Every share, by node: the rows are matched against them all; the lines count the
  // parts within the span of the shown ones.
  std::map<std::pair<std::string, std::string>, std::vector<Counted>> by_node;
  std::vector<SpendShare> cut = SharesBy(shares, by, now);
  for (const SpendShare& share : cut) {
    const SpendRecord& s = share.part;
    Counted c{&share, std::max(s.start, from), std::max(std::min(s.end.value_or(now), now), from),
              s.end.value_or(now), !shown || shown(share)};
    c.end = std::max(c.end, c.start);
    by_node[{s.fleet, s.node}].push_back(c);
  }
  for (const PreemptionGap& g : gaps) {
    auto it = by_node.find({g.fleet, g.node});
    if (it == by_node.end()) {
      continue;
    }
    for (Counted& c : it->second) {
      c.preempted += Overlap(c.start, c.end, g.start, g.end.value_or(now)) * c.share->fraction;
    }
  }
  // A row counts to its node's shares in its hour that ran its job (else to all of
  // them), by their time in the hour; a share cut by the span gets its part within it.
  for (const UsageRecord& u : usage) {
    auto it = by_node.find({u.fleet, u.node});
    if (it == by_node.end()) {
      continue;
    }
    Clock::WallTime hour_end = u.hour + std::chrono::hours(1);
    auto weight = [&](const Counted& c) {
      return Overlap(c.share->part.start, c.whole_end, u.hour, hour_end) * c.share->fraction;
    };
    bool job_ran = std::any_of(it->second.begin(), it->second.end(), [&](const Counted& c) {
      return c.share->job_id == u.job && weight(c) > 0;
    });
    double total = 0;
    for (const Counted& c : it->second) {
      if (!job_ran || c.share->job_id == u.job) {
        total += weight(c);
      }
    }
    if (total <= 0) {
      continue;
    }
    for (Counted& c : it->second) {
      double whole = Overlap(c.share->part.start, c.whole_end, u.hour, hour_end);
      if ((job_ran && c.share->job_id != u.job) || whole <= 0) {
        continue;
      }
      double part = weight(c) / total * Overlap(c.start, c.end, u.hour, hour_end) / whole;
      c.measured += u.seconds * part;
      c.busy += u.busy_seconds * part;
      c.input_bound += u.input_bound_seconds * part;
      c.idle += u.idle_seconds * part;
    }
  }
  std::map<std::string, int> chips_of;  // by type
  std::map<std::string, GoodputLine> lines;
  for (auto& [node, counted] : by_node) {
    for (const Counted& c : counted) {
      if (!c.shown || c.end <= c.start) {
        continue;
      }
      const SpendShare& share = *c.share;
      auto [chips, fresh] = chips_of.emplace(share.part.type, 1);
      if (fresh) {
        if (Result<AcceleratorType> t = catalog.Lookup(share.part.type); t.ok()) {
          chips->second = std::max(1, t->chips);
        }
      }
      // Node-seconds: paid, lost to preemption off the top, then what the agents said.
      double paid = SecondsOf(c.end - c.start) * share.fraction;
      GoodputSplit s;
      s.preempted = std::min(c.preempted, paid);
      double rest = paid - s.preempted;
      // More measured than was left (agents answering in a preemption's gap, a row
      // spread over part of its hour): its parts in proportion.
      double scale = c.measured > rest ? rest / c.measured : 1;
      double measured = c.measured * scale;
      s.busy = std::min(c.busy * scale, measured);
      s.input_bound = std::min(c.input_bound * scale, measured - s.busy);
      if (share.job_id.empty()) {
        s.idle = measured - s.busy - s.input_bound;  // no job ran: not busy was idle
      } else {
        s.idle = std::min(c.idle * scale, measured - s.busy - s.input_bound);
        s.other = measured - s.busy - s.input_bound - s.idle;
      }
      s.unmeasured = rest - measured;
      GoodputLine part;
      part.node_hours = paid / 3600;
      part.chip_hours = part.node_hours * chips->second;
      part.usd = share.part.usd_per_hour * SecondsOf(c.end - c.start) / 3600;
      for (const Category& k : kCategories) {
        part.hours.*k.part = s.*k.part / 3600;
        part.usd_split.*k.part = paid > 0 ? part.usd * (s.*k.part / paid) : 0;
      }
      std::string key = SpendKey(share, by);
      GoodputLine& line = lines[key];
      line.key = key;
      if (by == SpendGrouping::kJob) {
        line.job_id = share.job_id;
        line.job_name = share.job_name;
      }
      Add(line, part);
      Add(r.total, part);
    }
  }
  for (auto& [key, line] : lines) {
    r.lines.push_back(std::move(line));
  }
  if (by != SpendGrouping::kDay) {  // the map's order is the days'
    std::stable_sort(r.lines.begin(), r.lines.end(),
                     [](const GoodputLine& a, const GoodputLine& b) { return a.usd > b.usd; });
  }
  r.verdict = Verdict(r, by);
  return r;
}

}  // namespace tpufleet
