#include "util/encoding.h"
#include "util/fingerprint.h"
#include "util/pem_fingerprint.h"

#include <openssl/sha.h>

#include <cctype>
#include <utility>

#include "util/strings.h"

namespace tpufleet {
namespace {

constexpr std::string_view kStandardAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view kUrlAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

// The base64 digits of `bytes` in `alphabet`, without padding.
std::string EncodeDigits(std::string_view bytes, std::string_view alphabet) {
  std::string out;
  unsigned int buf = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    buf = (buf << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += alphabet[(buf >> bits) & 63];
    }
  }
  if (bits > 0) {
    out += alphabet[(buf << (6 - bits)) & 63];
  }
  return out;
}

// Appends the bytes that the unpadded base64 digits in `digits` stand for. A digit is
// looked up in `alphabet`, then in `alternate`; false on a character in neither.
bool DecodeDigits(std::string_view digits, std::string_view alphabet, std::string_view alternate,
                  std::string* out) {
  unsigned int buf = 0;
  int bits = 0;
  for (char c : digits) {
    size_t v = alphabet.find(c);
    if (v == std::string_view::npos) {
      v = alternate.find(c);
    }
    if (v == std::string_view::npos) {
      return false;
    }
    buf = (buf << 6) | static_cast<unsigned int>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((buf >> bits) & 0xff));
    }
  }
  return true;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

}  // namespace

std::string Base64Encode(std::string_view bytes) {
  std::string out = EncodeDigits(bytes, kStandardAlphabet);
  out.append((4 - out.size() % 4) % 4, '=');
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  size_t digits = text.find_last_not_of('=') + 1;  // 0 when all '='
  std::string out;
  if (text.empty() || text.size() % 4 != 0 || text.size() - digits > 2 ||
      !DecodeDigits(text.substr(0, digits), kStandardAlphabet, {}, &out)) {
    return InvalidArgumentError("not base64");
  }
  return out;
}

std::string Base64UrlEncode(std::string_view bytes) {
  return EncodeDigits(bytes, kUrlAlphabet);
}

Result<std::string> Base64UrlDecode(std::string_view text) {
  std::string out;
  if (!DecodeDigits(text.substr(0, text.find('=')), kUrlAlphabet, kStandardAlphabet, &out)) {
    return InvalidArgumentError("not base64url");
  }
  return out;
}

std::string Sha256(std::string_view bytes) {
  std::string digest(SHA256_DIGEST_LENGTH, '\0');
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
         reinterpret_cast<unsigned char*>(digest.data()));
  return digest;
}

std::string Sha256Fingerprint(std::string_view bytes) {
  std::string b64 = Base64Encode(Sha256(bytes));
  while (!b64.empty() && b64.back() == '=') {
    b64.pop_back();
  }
  return "SHA256:" + b64;
}

Result<std::string> PemCertificateFingerprint(std::string_view pem) {
  constexpr std::string_view kBegin = "-----BEGIN CERTIFICATE-----";
  constexpr std::string_view kEnd = "-----END CERTIFICATE-----";
  size_t begin = pem.find(kBegin);
  size_t end = begin == std::string_view::npos ? begin : pem.find(kEnd, begin);
  if (end == std::string_view::npos) {
    return InvalidArgumentError("no PEM certificate in it");
  }
  std::string base64;
  for (char c : pem.substr(begin + kBegin.size(), end - begin - kBegin.size())) {
    if (c != '\n' && c != '\r') {
      base64.push_back(c);
    }
  }
  Result<std::string> der = Base64Decode(base64);
  if (!der.ok()) {
    return InvalidArgumentError("its PEM certificate's base64 is broken");
  }
  return Sha256Fingerprint(*der);
}

bool IsSha256Fingerprint(std::string_view text) {
  // 32 bytes are 43 base64 characters and one '=' of padding, left out.
  constexpr std::string_view kPrefix = "SHA256:";
  constexpr size_t kDigits = 43;
  if (text.size() != kPrefix.size() + kDigits || text.substr(0, kPrefix.size()) != kPrefix) {
    return false;
  }
  Result<std::string> digest = Base64Decode(std::string(text.substr(kPrefix.size())) + "=");
  return digest.ok() && digest->size() == 32;
}

std::string HexEncode(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 0xf];
  }
  return out;
}

std::string UrlEscape(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string PercentDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && HexValue(text[i + 1]) >= 0 &&
        HexValue(text[i + 2]) >= 0) {
      out += static_cast<char>(HexValue(text[i + 1]) * 16 + HexValue(text[i + 2]));
      i += 2;
    } else if (plus_is_space && text[i] == '+') {
      out += ' ';
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string FormEncode(const std::map<std::string, std::string>& fields) {
  std::string out;
  for (const auto& [k, v] : fields) {
    if (!out.empty()) {
      out += '&';
    }
    out += UrlEscape(k) + "=" + UrlEscape(v);
  }
  return out;
}

std::map<std::string, std::string> ParseQueryString(std::string_view text) {
  std::map<std::string, std::string> out;
  for (auto& [name, value] : ParseQueryFields(text)) {
    out[name] = std::move(value);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> ParseQueryFields(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& field : Split(text, '&')) {
    if (field.empty()) {
      continue;
    }
    size_t eq = field.find('=');
    std::string value =
        eq == std::string::npos ? "" : PercentDecode(field.substr(eq + 1), /*plus_is_space=*/true);
    out.emplace_back(PercentDecode(field.substr(0, eq), /*plus_is_space=*/true), std::move(value));
  }
  return out;
}

}  // namespace tpufleet
