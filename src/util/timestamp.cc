#include "util/timestamp.h"

#include <cstdio>

namespace tpufleet {

std::string FormatTimestamp(Clock::WallTime t) {
  using std::chrono::duration_cast;
  auto since = t.time_since_epoch();
  auto secs = std::chrono::floor<std::chrono::seconds>(since);
  long long nanos = duration_cast<std::chrono::nanoseconds>(since - secs).count();
  std::chrono::sys_seconds ss{secs};
  auto days = std::chrono::floor<std::chrono::days>(ss);
  std::chrono::year_month_day ymd{days};
  std::chrono::hh_mm_ss<std::chrono::seconds> hms{ss - days};
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02lld:%02lld:%02lld",
                static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                static_cast<unsigned>(ymd.day()), static_cast<long long>(hms.hours().count()),
                static_cast<long long>(hms.minutes().count()),
                static_cast<long long>(hms.seconds().count()));
  std::string out = buf;
  if (nanos != 0) {
    char frac[32];
    if (nanos % 1'000'000 == 0) {
      std::snprintf(frac, sizeof frac, ".%03lld", nanos / 1'000'000);
    } else if (nanos % 1000 == 0) {
      std::snprintf(frac, sizeof frac, ".%06lld", nanos / 1000);
    } else {
      std::snprintf(frac, sizeof frac, ".%09lld", nanos);
    }
    out += frac;
  }
  out += "Z";
  return out;
}

namespace {

bool ReadDigits(std::string_view text, size_t* pos, size_t n, int* out) {
  if (*pos + n > text.size()) {
    return false;
  }
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = text[*pos + i];
    if (c < '0' || c > '9') {
      return false;
    }
    v = v * 10 + (c - '0');
  }
  *pos += n;
  *out = v;
  return true;
}

bool Expect(std::string_view text, size_t* pos, char c) {
  if (*pos < text.size() && (text[*pos] == c || (c == 'T' && text[*pos] == 't'))) {
    ++*pos;
    return true;
  }
  return false;
}

}  // namespace

Result<Clock::WallTime> ParseTimestamp(std::string_view text) {
  Status bad = InvalidArgumentError("invalid timestamp \"" + std::string(text) +
                                    "\": expected RFC 3339, e.g. 2026-01-01T00:00:00Z");
  size_t pos = 0;
  int y, mo, d, h, mi, s;
  if (!ReadDigits(text, &pos, 4, &y) || !Expect(text, &pos, '-') ||
      !ReadDigits(text, &pos, 2, &mo) || !Expect(text, &pos, '-') ||
      !ReadDigits(text, &pos, 2, &d) || !Expect(text, &pos, 'T') ||
      !ReadDigits(text, &pos, 2, &h) || !Expect(text, &pos, ':') ||
      !ReadDigits(text, &pos, 2, &mi) || !Expect(text, &pos, ':') ||
      !ReadDigits(text, &pos, 2, &s)) {
    return bad;
  }
  long long nanos = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (digits < 9) {
        nanos = nanos * 10 + (text[pos] - '0');
      }
      ++digits;
      ++pos;
    }
    if (digits == 0) {
      return bad;
    }
    for (int i = digits; i < 9; ++i) {
      nanos *= 10;
    }
  }
  int offset_minutes = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int sign = text[pos] == '-' ? -1 : 1;
    ++pos;
    int oh, om;
    if (!ReadDigits(text, &pos, 2, &oh) || !Expect(text, &pos, ':') ||
        !ReadDigits(text, &pos, 2, &om)) {
      return bad;
    }
    offset_minutes = sign * (oh * 60 + om);
  } else {
    return bad;
  }
  if (pos != text.size()) {
    return bad;
  }
  std::chrono::year_month_day ymd{std::chrono::year{y},
                                  std::chrono::month{static_cast<unsigned>(mo)},
                                  std::chrono::day{static_cast<unsigned>(d)}};
  if (!ymd.ok() || h > 23 || mi > 59 || s > 60) {
    return bad;
  }
  // In seconds first: a year past 2262 does not fit WallTime's nanoseconds, and such a
  // time (valid in proto, "9999-12-31T23:59:59Z") saturates instead of overflowing.
  std::chrono::sys_seconds tp = std::chrono::sys_days(ymd) + std::chrono::hours(h) +
                                std::chrono::minutes(mi) + std::chrono::seconds(s) -
                                std::chrono::minutes(offset_minutes);
  constexpr auto kMaxSecs =
      std::chrono::floor<std::chrono::seconds>(Clock::WallTime::max().time_since_epoch());
  constexpr auto kMinSecs =
      std::chrono::ceil<std::chrono::seconds>(Clock::WallTime::min().time_since_epoch());
  if (tp.time_since_epoch() >= kMaxSecs) {
    return Clock::WallTime::max();
  }
  if (tp.time_since_epoch() <= kMinSecs) {
    return Clock::WallTime::min();
  }
  return Clock::WallTime(std::chrono::duration_cast<Clock::WallTime::duration>(
      tp.time_since_epoch() + std::chrono::nanoseconds(nanos)));
}

}  // namespace tpufleet
