#include "util/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <regex>

namespace tpufleet {
namespace {

LogLevel LevelFromEnv() {
  LogLevel level = LogLevel::kWarn;
  if (const char* env = std::getenv("TPUFLEET_LOG")) {
    ParseLogLevel(env, &level);
  }
  return level;
}

std::atomic<int>& CurrentLevel() {
  static std::atomic<int> level{static_cast<int>(LevelFromEnv())};
  return level;
}

}  // namespace

bool ParseLogLevel(std::string_view text, LogLevel* level) {
  static constexpr std::pair<std::string_view, LogLevel> kNames[] = {
      {"error", LogLevel::kError}, {"warn", LogLevel::kWarn},
      {"info", LogLevel::kInfo},   {"debug", LogLevel::kDebug}};
  for (const auto& [name, value] : kNames) {
    if (text == name) {
      *level = value;
      return true;
    }
  }
  return false;
}

void SetLogLevel(LogLevel level) { CurrentLevel() = static_cast<int>(level); }

LogLevel GetLogLevel() { return static_cast<LogLevel>(CurrentLevel().load()); }

void Log(LogLevel level, std::string_view message) {
  if (static_cast<int>(level) > CurrentLevel().load()) {
    return;
  }
  static constexpr const char* kLevelNames[] = {"error", "warning", "info", "debug"};
  std::string line = "tpufleet: ";
  line += kLevelNames[static_cast<int>(level)];
  line += ": ";
  line += Redact(message);
  line += '\n';
  // One write(2) so concurrent lines do not interleave.
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
}

std::string Redact(std::string_view text) {
  static const std::regex kPatterns[] = {
      // PEM private keys, whole block.
      std::regex(R"(-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----)"),
      // Authorization headers.
      std::regex(R"((Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+)", std::regex::icase),
      // Google OAuth access tokens and JWTs (three base64url segments starting "ey").
      std::regex(R"(ya29\.[A-Za-z0-9._-]+)"),
      std::regex(R"(ey[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+)"),
      // key=value (query strings, forms) and "key": "value" (JSON) for credential names.
      std::regex(
          R"(((access_token|refresh_token|id_token|client_secret|assertion|password|private_key|token)(=|"\s*:\s*"))[^&"\s]+)",
          std::regex::icase),
  };
  std::string out(text);
  for (size_t i = 0; i < std::size(kPatterns); ++i) {
    // The last pattern keeps the field name (group 1) and masks only the value.
    const char* replacement = (i + 1 == std::size(kPatterns)) ? "$1[REDACTED]"
                              : (i == 1)                      ? "$1 [REDACTED]"
                                                              : "[REDACTED]";
    out = std::regex_replace(out, kPatterns[i], replacement);
  }
  return out;
}

}  // namespace tpufleet
