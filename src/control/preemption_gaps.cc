#include "control/preemption_gaps.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <utility>

namespace tpufleet {
namespace {

// The kinds that open and close a gap.
constexpr std::array<const char*, 4> kGapKinds = {"preempted", "job-resumed", "recovered",
                                                  "deleted"};
// How far before the report's span a gap's opening is looked for.
constexpr std::chrono::hours kLookBack{24};
// Events of a kind read at most: a gap needs its two ends, and a year of preemptions of
// a large fleet stays under it.
constexpr size_t kMaxEventsPerKind = 200000;

}  // namespace

std::vector<PreemptionGap> PreemptionGaps(const std::vector<EventRecord>& events) {
  std::vector<PreemptionGap> out;
  std::map<std::pair<std::string, std::string>, size_t> open;  // node -> its open gap
  for (const EventRecord& e : events) {
    std::pair<std::string, std::string> node{e.fleet, e.node};
    auto it = open.find(node);
    if (e.kind == "preempted") {
      if (it == open.end()) {
        open[node] = out.size();
        out.push_back({e.fleet, e.node, e.time, std::nullopt});
      }
    } else if (it != open.end()) {  // job-resumed, recovered, deleted
      out[it->second].end = e.time;
      open.erase(it);
    }
  }
  return out;
}

Result<std::vector<PreemptionGap>> ReadPreemptionGaps(Store& store, Clock::WallTime from) {
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
  std::vector<PreemptionGap> gaps = PreemptionGaps(events);
  std::erase_if(gaps, [&](const PreemptionGap& g) { return g.end && *g.end < from; });
  return gaps;
}

}  // namespace tpufleet
