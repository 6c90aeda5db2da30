#include "cli/table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tpufleet::cli {

std::string FormatNumber(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s(buf);
  if (s.find('.') != std::string::npos) {
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') {
      s.pop_back();
    }
  }
  return s;
}

std::string FormatPercent(double fraction) {
  return FormatNumber(std::round(fraction * 100), 0) + "%";
}

}  // namespace tpufleet::cli
