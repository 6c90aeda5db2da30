#include "util/mount_info.h"

#include <algorithm>

#include "util/strings.h"

namespace tpufleet {
namespace {

// mountinfo writes space, tab, newline and backslash as \ooo.
std::string UnescapeOctal(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    auto octal = [&](size_t k) { return k < s.size() && s[k] >= '0' && s[k] <= '7'; };
    if (s[i] == '\\' && octal(i + 1) && octal(i + 2) && octal(i + 3)) {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

std::vector<MountInfoEntry> ParseMountInfo(std::string_view text) {
  std::vector<MountInfoEntry> out;
  for (const std::string& line : Split(text, '\n')) {
    std::vector<std::string> f = Split(line, ' ');
    auto dash = std::find(f.begin(), f.end(), "-");
    long long id = 0;
    if (f.size() < 5 || dash == f.end() || f.end() - dash < 3 || !ParseInt(f[0], &id) || id < 0) {
      continue;
    }
    out.push_back({static_cast<uint64_t>(id), f[2], UnescapeOctal(f[4]), UnescapeOctal(*(dash + 2))});
  }
  return out;
}

}  // namespace tpufleet
