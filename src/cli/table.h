// The CLI's human-readable output: TextTable (util/text_table.h) and number formats.
//
// Thread-safety: a plain value.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "util/log.h"
#include "util/text_table.h"

namespace tpufleet::cli {

using ::tpufleet::TextTable;  // util/text_table.h

/// "12", "12.5", "0.25": a number without trailing zeros (at most `decimals`).
std::string FormatNumber(double v, int decimals = 2);
/// "71%" for 0.714.
std::string FormatPercent(double fraction);

}  // namespace tpufleet::cli
