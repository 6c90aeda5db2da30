#include "control/preemption_gaps.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <optional>
#include <utility>

namespace tpufleet {
namespace {

// The kinds that open and close a gap.
constexpr std::array<const char*, 5> kGapKinds = {"preempted", "job-resumed", "recovered",
                                                  "deleted", "ready"};
// How far before the report's span a gap's opening is looked for.
constexpr std::chrono::hours kLookBack{24};
// Events of a kind read at most: a gap needs its two ends, and a year of preemptions of
// a large fleet stays under it.
constexpr size_t kMaxEventsPerKind = 200000;

}  // namespace

std::vector<PreemptionGap> PreemptionGaps(const std::vector<EventRecord>& events,
                                          Clock::WallTime now) {
  struct Open {
    size_t gap = 0;
    std::optional<Clock::WallTime> ready;  // READY again since
  };
  std::vector<PreemptionGap> out;
  std::map<std::pair<std::string, std::string>, Open> open;  // by node
  auto waited_out = [](const Open& o, Clock::WallTime t) {
    return o.ready && t - *o.ready >= kResumeWait;
  };
  for (const EventRecord& e : events) {
    std::pair<std::string, std::string> node{e.fleet, e.node};
    auto it = open.find(node);
    if (it != open.end() && waited_out(it->second, e.time)) {
      out[it->second.gap].end = *it->second.ready;
      open.erase(it);
      it = open.end();
    }
    if (e.kind == "preempted") {
      if (it == open.end()) {
        open[node] = {out.size(), std::nullopt};
        out.push_back({e.fleet, e.node, e.time, std::nullopt});
      }
    } else if (it == open.end()) {
      continue;
    } else if (e.kind == "ready") {
      it->second.ready = it->second.ready.value_or(e.time);
    } else {  // job-resumed, recovered, deleted
      out[it->second.gap].end = e.time;
      open.erase(it);
    }
  }
  for (const auto& [node, o] : open) {
    if (waited_out(o, now)) {
      out[o.gap].end = *o.ready;
    }
  }
  return out;
}

Result<std::vector<PreemptionGap>> ReadPreemptionGaps(Store& store, Clock::WallTime from,
                                                      Clock::WallTime now) {
  std::vector<EventRecord> events;
  for (const char* kind : kGapKinds) {
    EventQuery q;
    q.kind = kind;
    q.since = from - kLookBack;
    q.limit = kMaxEventsPerKind;
    TPUFLEET_ASSIGN_OR_RETURN(std::vector<EventRecord> some, store.Events(q));
    events.insert(events.end(), some.begin(), some.end());
  }
  std::stable_sort(events.begin(), events.end(), [](const EventRecord& a, const EventRecord& b) {
    return a.time != b.time ? a.time < b.time : a.id < b.id;
  });
  std::vector<PreemptionGap> gaps = PreemptionGaps(events, now);
  std::erase_if(gaps, [&](const PreemptionGap& g) { return g.end && *g.end < from; });
  return gaps;
}

}  // namespace tpufleet
