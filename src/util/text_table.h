// TextTable: left-aligned columns for human-readable output (the CLI's tables, the
// emulator's status).
//
// Thread-safety: a plain value.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tpufleet {

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

}  // namespace tpufleet
