// FakeHostKey: a well-formed SSH host key for fakes (FakeCloud's workers).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/encoding.h"
#include "util/strings.h"

namespace tpufleet {

/// A well-formed ed25519 public key line whose key bytes come from `seed`.
inline std::string FakeHostKey(uint64_t seed) {
  auto put = [](std::string& out, std::string_view s) {
    for (int shift = 24; shift >= 0; shift -= 8) {
      out += static_cast<char>((s.size() >> shift) & 0xff);
    }
    out += s;
  };
  std::string key;
  for (int i = 0; i < 4; ++i) {
    uint64_t x = Fnv1a64(std::to_string(seed) + "/" + std::to_string(i));
    for (int b = 0; b < 8; ++b) {
      key += static_cast<char>((x >> (8 * b)) & 0xff);
    }
  }
  std::string blob;
  put(blob, "ssh-ed25519");
  put(blob, key);
  return "ssh-ed25519 " + Base64Encode(blob);
}

}  // namespace tpufleet
