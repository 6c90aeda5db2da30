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
  // Credential field names, for the key=value and JSON patterns below.
  constexpr const char* kNames =
      "(access_token|refresh_token|id_token|client_secret|assertion|password|private_key|token)";
  struct Pattern {
    std::regex re;
    const char* replacement;
  };
  static const Pattern kPatterns[] = {
      // PEM private keys, whole block; a block cut off before its END line to the end.
      {std::regex(R"(-----BEGIN [A-Z ]*PRIVATE KEY-----)"
                  R"((?:[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----|[\s\S]*))"),
       "[REDACTED]"},
      // Authorization headers: the RFC 6750 token68 characters. A credential has a capital,
      // a digit or a symbol somewhere; an all-lower-case word is prose ("bearer token").
      {std::regex(R"((Bearer|bearer|BEARER|Basic|basic|BASIC)\s+)"
                  R"((?=[a-z]*[A-Z0-9._~+/=-])[A-Za-z0-9._~+/=-]+)"),
       "$1 [REDACTED]"},
      // Google OAuth access tokens and JWTs (three base64url segments starting "ey").
      {std::regex(R"(ya29\.[A-Za-z0-9._-]+)"), "[REDACTED]"},
      {std::regex(R"(ey[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+)"), "[REDACTED]"},
      // key=value (query strings, forms): the value runs to '&', a quote or a space.
      {std::regex(std::string("(") + kNames + "=)[^&\"\\s]+", std::regex::icase), "$1[REDACTED]"},
      // "key": "value" (JSON): the value runs to its closing quote, spaces and escapes included.
      // Written as runs of plain characters: std::regex recurses once per repetition, and an
      // alternation per character overflows the stack on a value of about 10 KiB.
      {std::regex(std::string("(") + kNames + R"("\s*:\s*")[^"\\]*(?:\\.[^"\\]*)*)",
                  std::regex::icase),
       "$1[REDACTED]"},
  };
  std::string out(text);
  for (const Pattern& p : kPatterns) {
    out = std::regex_replace(out, p.re, p.replacement);
  }
  return out;
}

}  // namespace tpufleet
