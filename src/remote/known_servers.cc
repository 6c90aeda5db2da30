#include "remote/known_servers.h"

#include <vector>

#include "util/fingerprint.h"
#include "util/file.h"
#include "util/private_file.h"
#include "util/strings.h"

namespace tpufleet::remote {
namespace {

// A line is under a hundred bytes; ten thousand servers is more than anyone talks to.
constexpr size_t kMaxKnownServersBytes = 1 << 20;

// The file's lines, or none when it does not exist.
Result<std::vector<std::string>> Lines(const std::string& path) {
  Result<std::string> text = ReadPrivateFile(path, kMaxKnownServersBytes);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) {
      return std::vector<std::string>{};
    }
    return text.status();
  }
  std::vector<std::string> lines = Split(*text, '\n');
  if (!lines.empty() && lines.back().empty()) {
    lines.pop_back();
  }
  return lines;
}

// The server and fingerprint of `line`; {"", ""} for a blank line or a comment.
Result<std::pair<std::string, std::string>> Entry(const std::string& line,
                                                  const std::string& where) {
  std::string_view text = Trim(line);
  if (text.empty() || text.front() == '#') {
    return std::make_pair(std::string(), std::string());
  }
  size_t space = text.find(' ');
  std::string_view fingerprint = space == std::string_view::npos ? "" : Trim(text.substr(space));
  if (space == 0 || space == std::string_view::npos || !IsSha256Fingerprint(fingerprint)) {
    return InvalidArgumentError(where + ": expected \"HOST:PORT SHA256:…\"");
  }
  return std::make_pair(std::string(text.substr(0, space)), std::string(fingerprint));
}

}  // namespace

Result<std::string> KnownServersPath(const std::map<std::string, std::string>& env) {
  auto xdg = env.find("XDG_CONFIG_HOME");
  if (xdg != env.end() && !xdg->second.empty()) {
    return xdg->second + "/tpufleet/known_servers";
  }
  auto home = env.find("HOME");
  if (home != env.end() && !home->second.empty()) {
    return home->second + "/.config/tpufleet/known_servers";
  }
  return FailedPreconditionError(
      "neither HOME nor XDG_CONFIG_HOME is set: nowhere to keep the servers' certificates");
}

Result<std::optional<std::string>> PinnedFingerprint(const std::string& path,
                                                     const std::string& server) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<std::string> lines, Lines(path));
  for (size_t i = 0; i < lines.size(); ++i) {
    TPUFLEET_ASSIGN_OR_RETURN(auto entry, Entry(lines[i], path + ":" + std::to_string(i + 1)));
    if (entry.first == server) {
      return std::optional<std::string>(entry.second);
    }
  }
  return std::optional<std::string>();
}

Status PinFingerprint(const std::string& path, const std::string& server,
                      const std::string& fingerprint) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<std::string> lines, Lines(path));
  std::string text;
  bool replaced = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    TPUFLEET_ASSIGN_OR_RETURN(auto entry, Entry(lines[i], path + ":" + std::to_string(i + 1)));
    if (entry.first == server) {
      if (replaced) {
        continue;  // one line per server
      }
      text += server + " " + fingerprint + "\n";
      replaced = true;
    } else {
      text += lines[i] + "\n";
    }
  }
  if (!replaced) {
    text += server + " " + fingerprint + "\n";
  }
  TPUFLEET_TRY(MakePrivateDirs(path.substr(0, path.rfind('/'))));
  return WriteFileAtomic(path, text, 0600);
}

}  // namespace tpufleet::remote
