// TextTable: left-aligned columns for the CLI's human-readable output.
//
// Thread-safety: a plain value.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace tpufleet::cli {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  /// Prints every row, columns separated by two spaces, no trailing blanks; each cell
  /// on one line, through TerminalText.
  void Print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

/// `text` as a terminal shows it as text: every control byte (C0 but '\n' when
/// `keep_newlines`, DEL, and C1 in its UTF-8 form) becomes a visible "\x1b". For what the
/// cloud, a worker or a file said before it reaches a person's terminal, where an escape
/// sequence could rewrite the screen, the title or the clipboard (issue 10). Cells of a
/// TextTable get it (without newlines) when printed.
std::string TerminalText(std::string_view text, bool keep_newlines = true);

/// "12", "12.5", "0.25": a number without trailing zeros (at most `decimals`).
std::string FormatNumber(double v, int decimals = 2);
/// "71%" for 0.714.
std::string FormatPercent(double fraction);

}  // namespace tpufleet::cli
