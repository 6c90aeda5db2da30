// Text encodings of bytes and of key-value pairs: base64 (standard, as OpenSSH writes
// key blobs, and base64url, as JWTs and page tokens use it) and the percent-encoding
// of URLs and application/x-www-form-urlencoded bodies; and SHA-256, of which OpenSSH's
// key fingerprints are made. One implementation of each,
// so the emulator, the core checks and the HTTP client all read and write the same.
//
// Decoders say what they accept; they never guess at a broken input beyond that.
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace tpufleet {

/// Standard base64 (RFC 4648 §4) with '=' padding.
std::string Base64Encode(std::string_view bytes);
/// Strict standard base64 with padding, as OpenSSH writes it: the length a multiple of
/// four, at most two '=' and only at the end. InvalidArgument on anything else,
/// including "".
Result<std::string> Base64Decode(std::string_view text);

/// base64url (RFC 4648 §5) without padding, as JWTs use.
std::string Base64UrlEncode(std::string_view bytes);
/// Decodes base64url as JWT readers do: '+' and '/' of the standard alphabet are read
/// too, and decoding stops at the first '=' (padding). InvalidArgument on any other
/// character.
Result<std::string> Base64UrlDecode(std::string_view text);

/// The SHA-256 digest of `bytes`: 32 raw bytes.
std::string Sha256(std::string_view bytes);

/// `bytes` as lowercase hex, two digits a byte: how sha256sum writes a digest.
std::string HexEncode(std::string_view bytes);

/// Percent-encodes everything but unreserved characters (RFC 3986).
std::string UrlEscape(std::string_view text);
/// Decodes %XX escapes (either case); a '%' not followed by two hex digits stays as it
/// is. `plus_is_space`: '+' means a space, as in a query or form body, never in a path.
std::string PercentDecode(std::string_view text, bool plus_is_space);

/// "a=1&b=x%20y": form or query encoding of `fields` (application/x-www-form-urlencoded).
std::string FormEncode(const std::map<std::string, std::string>& fields);
/// The fields of a query string or form body ("a=1&b=x+y", without the '?'), decoded.
/// A field without '=' has the value ""; empty fields are skipped; the last of a
/// repeated name wins.
std::map<std::string, std::string> ParseQueryString(std::string_view text);
/// The same, every field in the order given (a repeated name as often as it comes). The
/// value is everything after the first '=': "$alt=json;enum-encoding=int" is $alt's.
std::vector<std::pair<std::string, std::string>> ParseQueryFields(std::string_view text);

}  // namespace tpufleet
