// RFC 3339 timestamps as proto3 JSON writes them ("2026-01-01T00:00:01.500Z"): the
// createTime of a Cloud TPU node or operation. The emulator writes them, the GCP client
// reads them; one implementation serves both.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "util/clock.h"
#include "util/status.h"

namespace tpufleet {

/// RFC 3339 in UTC with 0, 3, 6 or 9 fractional digits, as proto3 JSON writes
/// Timestamps: "2026-01-01T00:00:00Z", "2026-01-01T00:00:01.500Z".
std::string FormatTimestamp(Clock::WallTime t);
/// Parses an RFC 3339 timestamp ("…Z" or "…+02:00", any fractional digits). A time
/// beyond what WallTime holds (after 2262, valid in proto up to year 9999) saturates
/// to WallTime::max() (or min()). InvalidArgument on anything else.
Result<Clock::WallTime> ParseTimestamp(std::string_view text);

}  // namespace tpufleet
