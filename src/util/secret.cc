#include "util/secret.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "util/encoding.h"

namespace tpufleet {

Result<std::string> RandomBytes(size_t n) {
  std::string out(n, '\0');
  size_t done = 0;
  while (done < n) {
    ssize_t got = ::getrandom(out.data() + done, n - done, 0);
    if (got < 0) {
      if (errno == EINTR) {
        continue;
      }
      return InternalError(std::string("getrandom: ") + std::strerror(errno));
    }
    done += static_cast<size_t>(got);
  }
  return out;
}

Result<std::string> RandomHex(size_t n) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string raw, RandomBytes(n));
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * n);
  for (unsigned char c : raw) {
    hex += kHex[c >> 4];
    hex += kHex[c & 15];
  }
  return hex;
}

Result<std::string> NewSecretToken(std::string_view prefix) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string bytes, RandomBytes(kSecretBytes));
  return std::string(prefix) + Base64UrlEncode(bytes);
}

Result<std::string> RandomUuid() {
  TPUFLEET_ASSIGN_OR_RETURN(std::string raw, RandomBytes(2 * sizeof(uint64_t)));
  uint64_t hi = 0;
  uint64_t lo = 0;
  std::memcpy(&hi, raw.data(), sizeof hi);
  std::memcpy(&lo, raw.data() + sizeof hi, sizeof lo);
  return FormatUuidV4(hi, lo);
}

std::string FormatUuidV4(uint64_t hi, uint64_t lo) {
  hi = (hi & ~0xf000ULL) | 0x4000ULL;                         // version 4
  lo = (lo & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;  // RFC 4122 variant (10)
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08llx-%04llx-%04llx-%04llx-%012llx",
                static_cast<unsigned long long>(hi >> 32),
                static_cast<unsigned long long>((hi >> 16) & 0xffff),
                static_cast<unsigned long long>(hi & 0xffff),
                static_cast<unsigned long long>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xffffffffffffULL));
  return buf;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  // volatile keeps the compiler from ending the loop at the first difference.
  volatile unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = diff | static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

}  // namespace tpufleet
