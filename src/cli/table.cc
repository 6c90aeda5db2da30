#include "cli/table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tpufleet::cli {

void TextTable::Print(std::ostream& out) const {
  std::vector<std::vector<std::string>> shown;
  std::vector<size_t> widths;
  for (const auto& row : rows_) {
    std::vector<std::string>& cells = shown.emplace_back();
    widths.resize(std::max(widths.size(), row.size()));
    for (size_t i = 0; i < row.size(); ++i) {
      cells.push_back(TerminalText(row[i], /*keep_newlines=*/false));
      widths[i] = std::max(widths[i], cells[i].size());
    }
  }
  for (const auto& row : shown) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) {
        line += std::string(widths[i] - row[i].size() + 2, ' ');
      }
    }
    out << line << "\n";
  }
}

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
