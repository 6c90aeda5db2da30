#include "util/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cctype>
#include <cstring>

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

std::string TerminalText(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  auto visible = [&out](unsigned char c) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 0xf];
  };
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    unsigned char next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    if (c == 0xc2 && next >= 0x80 && next <= 0x9f) {  // U+0080..U+009F: C1 controls
      visible(c);
      visible(next);
      ++i;
    } else if ((c < 0x20 && !(keep_newlines && (c == '\n' || c == '\t'))) || c == 0x7f) {
      visible(c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

void Log(LogLevel level, std::string_view message) {
  if (static_cast<int>(level) > CurrentLevel().load()) {
    return;
  }
  static constexpr const char* kLevelNames[] = {"error", "warning", "info", "debug"};
  std::string line = "tpufleet: ";
  line += kLevelNames[static_cast<int>(level)];
  line += ": ";
  line += TerminalText(Redact(message));
  line += '\n';
  // One write(2) so concurrent lines do not interleave.
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
}

namespace {

// The scanner behind Redact. Each matcher looks at `text` from `at`; when it finds a
// secret there it returns how many characters to drop and what to write instead.
// Plain loops, not std::regex: std::regex recurses once per matched character and
// overflows the stack on a secret of some tens of KiB.
struct Match {
  size_t length = 0;  // 0: no secret starts here
  std::string replacement;
};

bool IsToken68(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("._~+/=-", c) != nullptr;
}
bool IsBase64Url(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
}
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

size_t RunOf(std::string_view text, size_t at, bool (*pred)(char)) {
  size_t end = at;
  while (end < text.size() && pred(text[end])) {
    ++end;
  }
  return end - at;
}

bool StartsWithNoCase(std::string_view text, size_t at, std::string_view word) {
  if (text.size() - at < word.size()) {
    return false;
  }
  for (size_t k = 0; k < word.size(); ++k) {
    if (std::tolower(static_cast<unsigned char>(text[at + k])) != word[k]) {
      return false;
    }
  }
  return true;
}

// "-----BEGIN … PRIVATE KEY-----" up to its END line, or to the end of a cut-off text.
Match PemPrivateKey(std::string_view text, size_t at) {
  constexpr std::string_view kBegin = "-----BEGIN ";
  constexpr std::string_view kTail = "PRIVATE KEY-----";
  if (text.substr(at, kBegin.size()) != kBegin) {
    return {};
  }
  size_t k = at + kBegin.size();
  while (k < text.size() && (std::isupper(static_cast<unsigned char>(text[k])) || text[k] == ' ') &&
         text.substr(k, kTail.size()) != kTail) {
    ++k;
  }
  if (text.substr(k, kTail.size()) != kTail) {
    return {};
  }
  size_t end = text.size();
  for (size_t e = text.find("-----END ", k); e != std::string_view::npos;
       e = text.find("-----END ", e + 1)) {
    size_t tail = text.find(kTail, e);
    if (tail != std::string_view::npos &&
        text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ ", e + 9) >= tail) {
      end = tail + kTail.size();
      break;
    }
  }
  return {end - at, "[REDACTED]"};
}

// "Bearer <token68>" / "Basic <token68>". A credential has a capital, a digit or a
// symbol somewhere; an all-lower-case word is prose ("missing bearer token").
Match AuthorizationValue(std::string_view text, size_t at) {
  for (std::string_view scheme : {"Bearer", "bearer", "BEARER", "Basic", "basic", "BASIC"}) {
    if (text.substr(at, scheme.size()) != scheme) {
      continue;
    }
    size_t spaces = RunOf(text, at + scheme.size(), IsSpace);
    size_t start = at + scheme.size() + spaces;
    size_t token = RunOf(text, start, IsToken68);
    if (spaces == 0 || token == 0) {
      return {};
    }
    std::string_view value = text.substr(start, token);
    bool credential = value.find_first_not_of("abcdefghijklmnopqrstuvwxyz") != std::string_view::npos;
    if (!credential) {
      return {};
    }
    return {scheme.size() + spaces + token, std::string(scheme) + " [REDACTED]"};
  }
  return {};
}

// Google access tokens (ya29.…) and JWTs (three base64url segments, the first "ey…").
Match BareToken(std::string_view text, size_t at) {
  if (text.substr(at, 5) == "ya29.") {
    size_t n = RunOf(text, at + 5, [](char c) { return IsBase64Url(c) || c == '.'; });
    return n > 0 ? Match{5 + n, "[REDACTED]"} : Match{};
  }
  if (text.substr(at, 2) == "ey") {
    size_t a = RunOf(text, at, IsBase64Url);
    if (a < 10 || at + a >= text.size() || text[at + a] != '.') {
      return {};
    }
    size_t b = RunOf(text, at + a + 1, IsBase64Url);
    if (b < 8 || at + a + 1 + b >= text.size() || text[at + a + 1 + b] != '.') {
      return {};
    }
    size_t c = RunOf(text, at + a + b + 2, IsBase64Url);
    return c > 0 ? Match{a + b + 2 + c, "[REDACTED]"} : Match{};
  }
  return {};
}

// key=value (query strings, forms) and "key": "value" (JSON) for credential names. The
// form value runs to '&', a quote or a space; the JSON value to its closing quote.
Match CredentialField(std::string_view text, size_t at) {
  static constexpr std::string_view kNames[] = {
      "access_token", "refresh_token", "id_token", "client_secret",
      "assertion",    "password",      "private_key", "token"};
  for (std::string_view name : kNames) {
    if (!StartsWithNoCase(text, at, name)) {
      continue;
    }
    size_t k = at + name.size();
    if (k < text.size() && text[k] == '=') {
      size_t n = 0;
      while (k + 1 + n < text.size() && text[k + 1 + n] != '&' && text[k + 1 + n] != '"' &&
             !IsSpace(text[k + 1 + n])) {
        ++n;
      }
      if (n > 0) {
        return {name.size() + 1 + n, std::string(text.substr(at, name.size())) + "=[REDACTED]"};
      }
      continue;
    }
    if (k >= text.size() || text[k] != '"') {
      continue;
    }
    size_t q = k + 1 + RunOf(text, k + 1, IsSpace);
    if (q >= text.size() || text[q] != ':') {
      continue;
    }
    q += 1 + RunOf(text, q + 1, IsSpace);
    if (q >= text.size() || text[q] != '"') {
      continue;
    }
    size_t v = q + 1;
    while (v < text.size() && text[v] != '"') {
      v += (text[v] == '\\' && v + 1 < text.size()) ? 2 : 1;
    }
    return {v - at, std::string(text.substr(at, q + 1 - at)) + "[REDACTED]"};
  }
  return {};
}

}  // namespace

std::string Redact(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    Match m;
    for (auto matcher : {PemPrivateKey, AuthorizationValue, BareToken, CredentialField}) {
      m = matcher(text, i);
      if (m.length > 0) {
        break;
      }
    }
    if (m.length > 0) {
      out += m.replacement;
      i += m.length;
    } else {
      out += text[i++];
    }
  }
  return out;
}

}  // namespace tpufleet
