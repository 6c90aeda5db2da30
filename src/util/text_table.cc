#include "util/text_table.h"

#include <algorithm>

#include "util/log.h"

namespace tpufleet {

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

}  // namespace tpufleet
