// TextTable: left-aligned columns for the CLI's human-readable output.
//
// Thread-safety: a plain value.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "util/log.h"

namespace tpufleet::cli {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  /// Prints every row, columns separated by two spaces, no trailing blanks; each cell
  /// on one line, through TerminalText (util/log.h).
  void Print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

/// "12", "12.5", "0.25": a number without trailing zeros (at most `decimals`).
std::string FormatNumber(double v, int decimals = 2);
/// "71%" for 0.714.
std::string FormatPercent(double fraction);

}  // namespace tpufleet::cli
