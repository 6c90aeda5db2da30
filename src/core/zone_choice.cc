#include "core/zone_choice.h"

#include <algorithm>
#include <map>

namespace tpufleet {

std::vector<std::string> OrderZones(const std::vector<std::string>& candidates,
                                    const std::string& type,
                                    const std::vector<Stockout>& stockouts, Clock::WallTime now,
                                    std::chrono::seconds memory) {
  std::map<std::string, Clock::WallTime> last_stockout;
  for (const Stockout& s : stockouts) {
    if (s.type != type || s.time + memory <= now || s.time > now) {
      continue;
    }
    Clock::WallTime& t = last_stockout[s.zone];
    t = std::max(t, s.time);
  }
  std::vector<std::string> fresh;
  std::vector<std::string> stocked_out;
  for (const std::string& zone : candidates) {
    (last_stockout.count(zone) ? stocked_out : fresh).push_back(zone);
  }
  std::stable_sort(stocked_out.begin(), stocked_out.end(),
                   [&](const std::string& a, const std::string& b) {
                     return last_stockout[a] < last_stockout[b];
                   });
  fresh.insert(fresh.end(), stocked_out.begin(), stocked_out.end());
  return fresh;
}

}  // namespace tpufleet
