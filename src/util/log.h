// Logging to stderr, with secrets redacted.
//
// Every line goes through Redact() before it is written, so a bearer token, an OAuth
// refresh token, a private key or a `password=` query parameter that ends up in a
// message is masked. Callers should still not log secrets; this is the safety net.
//
// The level comes from TPUFLEET_LOG (error, warn, info, debug; default warn) and can be
// set with SetLogLevel. Thread-safety: Log may be called from any thread; lines are
// written whole.
#pragma once

#include <string>
#include <string_view>

namespace tpufleet {

enum class LogLevel { kError = 0, kWarn, kInfo, kDebug };

/// Parses "error", "warn", "info" or "debug"; false on anything else.
bool ParseLogLevel(std::string_view text, LogLevel* level);
void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();

/// Writes "tpufleet: <level>: <message>\n" to stderr if `level` is enabled; the message
/// through Redact and TerminalText.
void Log(LogLevel level, std::string_view message);

/// `text` with secrets replaced by "[REDACTED]": bearer tokens, Google access tokens
/// (ya29.…), JWT-looking strings, PEM private keys, and the values of query or JSON
/// fields named like a credential (access_token, refresh_token, client_secret,
/// assertion, password, private_key, token).
std::string Redact(std::string_view text);

/// `text` as a terminal shows it as text: every control byte (C0 but '\n' and '\t' when
/// `keep_newlines`, DEL, and C1 in its UTF-8 form) becomes a visible "\x1b". For what the
/// cloud, a worker or a file said before it reaches a person's terminal, where an escape
/// sequence could rewrite the screen, the title or the clipboard (issue 10).
std::string TerminalText(std::string_view text, bool keep_newlines = true);

}  // namespace tpufleet
