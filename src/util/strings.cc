#include "util/strings.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>

namespace tpufleet {

std::vector<std::string> Split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(sep, start);
    parts.emplace_back(text.substr(start, end - start));
    if (end == std::string_view::npos) {
      return parts;
    }
    start = end + 1;
  }
}

std::string_view Trim(std::string_view text) {
  const char* kSpace = " \t\r\n";
  size_t b = text.find_first_not_of(kSpace);
  if (b == std::string_view::npos) {
    return {};
  }
  size_t e = text.find_last_not_of(kSpace);
  return text.substr(b, e - b + 1);
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) {
      out += sep;
    }
    out += parts[i];
  }
  return out;
}

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

std::string AsciiLower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return out;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::vector<std::string> NearestNames(std::string_view query,
                                      const std::vector<std::string>& candidates, size_t max) {
  struct Scored {
    size_t distance;
    size_t index;
  };
  std::vector<Scored> scored;
  for (size_t i = 0; i < candidates.size(); ++i) {
    size_t d = EditDistance(query, candidates[i]);
    // Allow about one edit in three characters, and at least two: "v4-33" -> "v4-32",
    // "us-central-2b" -> "us-central2-b", but not "v4" -> "v6e-256".
    size_t allowed = std::max<size_t>(2, candidates[i].size() / 3);
    if (d <= allowed && d < std::max(query.size(), candidates[i].size())) {
      scored.push_back({d, i});
    }
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const Scored& x, const Scored& y) { return x.distance < y.distance; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && out.size() < max; ++i) {
    const std::string& name = candidates[scored[i].index];
    if (std::find(out.begin(), out.end(), name) == out.end()) {
      out.push_back(name);
    }
  }
  return out;
}

std::string DidYouMean(std::string_view query, const std::vector<std::string>& candidates) {
  std::vector<std::string> near = NearestNames(query, candidates);
  if (near.empty()) {
    return "";
  }
  std::string out = " (did you mean ";
  for (size_t i = 0; i < near.size(); ++i) {
    if (i > 0) {
      out += (i + 1 == near.size()) ? " or " : ", ";
    }
    out += near[i];
  }
  return out + "?)";
}

Result<std::chrono::seconds> ParseDuration(std::string_view text) {
  auto bad = [&] {
    return InvalidArgumentError("'" + std::string(text) +
                                "' is not a duration; expected a number with a unit, like 90s, "
                                "30m, 6h, 2d or 1h30m");
  };
  if (text.empty()) {
    return bad();
  }
  // About 34,800 years: anything longer is a typo, and the cap keeps the sum in range.
  constexpr long long kMaxSeconds = 1LL << 40;
  long long plain = 0;
  if (ParseInt(text, &plain)) {
    if (plain > kMaxSeconds) {
      return bad();
    }
    return std::chrono::seconds(plain);
  }
  long long total = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      ++i;
    }
    long long n = 0;
    if (i == start || i >= text.size() || !ParseInt(text.substr(start, i - start), &n)) {
      return bad();
    }
    long long unit = 0;
    switch (text[i]) {
      case 's': unit = 1; break;
      case 'm': unit = 60; break;
      case 'h': unit = 3600; break;
      case 'd': unit = 86400; break;
      default: return bad();
    }
    ++i;
    if (n > kMaxSeconds / unit) {
      return bad();
    }
    total += n * unit;
    if (total > kMaxSeconds) {
      return bad();
    }
  }
  return std::chrono::seconds(total);
}

std::string FormatDuration(std::chrono::seconds d) {
  long long s = d.count();
  if (s == 0) {
    return "0s";
  }
  std::string out;
  for (auto [unit, name] : {std::pair{86400LL, 'd'}, {3600LL, 'h'}, {60LL, 'm'}, {1LL, 's'}}) {
    if (s >= unit) {
      out += std::to_string(s / unit) + name;
      s %= unit;
    }
  }
  return out;
}

bool ParseInt(std::string_view text, long long* out) {
  // from_chars takes a leading '-'; a whole number here is digits only.
  if (text.empty() || text[0] < '0' || text[0] > '9') {
    return false;
  }
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

bool ParseDouble(std::string_view text, double* out) {
  if (text.empty()) {
    return false;
  }
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && std::isfinite(*out);
}

uint64_t Fnv1a64(std::string_view text) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string ShellQuote(std::string_view text) {
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("_./:@%+,-").find(c) != std::string_view::npos;
  });
  if (plain) {
    return std::string(text);
  }
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string ShellJoin(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) {
      out += ' ';
    }
    out += ShellQuote(w);
  }
  return out;
}

std::string FormatUsd(double usd) {
  if (!std::isfinite(usd)) {
    return std::isnan(usd) ? "$nan" : usd < 0 ? "-$inf" : "$inf";
  }
  // DBL_MAX prints as 309 digits before the point.
  char buf[400];
  std::snprintf(buf, sizeof buf, "%.2f", std::fabs(usd));
  std::string digits(buf);
  size_t dot = digits.find('.');
  std::string whole = digits.substr(0, dot);
  std::string grouped;
  for (size_t i = 0; i < whole.size(); ++i) {
    if (i > 0 && (whole.size() - i) % 3 == 0) {
      grouped += ',';
    }
    grouped += whole[i];
  }
  // No minus on an amount that rounds to zero.
  bool negative = usd < 0 && digits != "0.00";
  return std::string(negative ? "-$" : "$") + grouped + digits.substr(dot);
}

std::string FormatBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) {
    return std::to_string(bytes) + " bytes";
  }
  double v = static_cast<double>(bytes);
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < std::size(kUnits)) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  if (v == static_cast<double>(static_cast<uint64_t>(v))) {
    std::snprintf(buf, sizeof buf, "%.0f %s", v, kUnits[unit]);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[unit]);
  }
  return buf;
}

}  // namespace tpufleet
