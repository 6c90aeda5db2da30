#include "util/timestamp.h"

#include <gtest/gtest.h>

namespace tpufleet {
namespace {

using std::chrono::milliseconds;

Clock::WallTime At(int y, unsigned mo, unsigned d) {
  return Clock::WallTime(std::chrono::sys_days(std::chrono::year{y} / mo / d));
}

TEST(Timestamp, IsProto3Json) {
  Clock::WallTime t = At(2026, 1, 1);
  EXPECT_EQ(FormatTimestamp(t), "2026-01-01T00:00:00Z");
  EXPECT_EQ(FormatTimestamp(t + milliseconds(1500)), "2026-01-01T00:00:01.500Z");
  EXPECT_EQ(FormatTimestamp(t + std::chrono::microseconds(7)), "2026-01-01T00:00:00.000007Z");
  EXPECT_EQ(FormatTimestamp(At(2024, 2, 29) + std::chrono::hours(23) + std::chrono::minutes(59)),
            "2024-02-29T23:59:00Z");

  EXPECT_EQ(ParseTimestamp("2026-01-01T00:00:00Z").value(), t);
  EXPECT_EQ(ParseTimestamp("2026-01-01T00:00:01.5Z").value(), t + milliseconds(1500));
  EXPECT_EQ(ParseTimestamp("2026-01-01T02:00:00+02:00").value(), t);
  EXPECT_EQ(ParseTimestamp("2025-12-31T23:00:00-01:00").value(), t);
  for (const char* bad : {"", "2026-01-01", "2026-01-01T00:00:00", "2026-13-01T00:00:00Z",
                          "2026-01-01T00:00:00.Z", "2026-01-01T00:00:00Zjunk", "yesterday"}) {
    EXPECT_FALSE(ParseTimestamp(bad).ok()) << bad;
  }
  EXPECT_EQ(ParseTimestamp(FormatTimestamp(t + milliseconds(123))).value(), t + milliseconds(123));
}

// A year past 2262 used to overflow WallTime's nanoseconds.
TEST(TimestampRegression, FarFutureSaturatesInsteadOfOverflowing) {
  EXPECT_EQ(ParseTimestamp("9999-12-31T23:59:59Z").value(), Clock::WallTime::max());
  EXPECT_EQ(ParseTimestamp("0001-01-01T00:00:00Z").value(), Clock::WallTime::min());
}

}  // namespace
}  // namespace tpufleet
