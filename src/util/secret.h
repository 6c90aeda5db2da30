// Secrets made and compared safely: random bytes from the kernel's CSPRNG (getrandom(2),
// never a seeded generator, whose output a local user could predict), and a comparison
// whose time does not depend on where two strings first differ, so a caller that checks
// a presented token cannot be timed into revealing it byte by byte.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/status.h"

namespace tpufleet {

/// Bytes of a fresh bearer secret: 256 bits, beyond any guessing.
inline constexpr size_t kSecretBytes = 32;

/// `n` bytes from the kernel's CSPRNG. Internal when the kernel refuses.
Result<std::string> RandomBytes(size_t n);

/// `n` bytes from the kernel's CSPRNG as 2n lowercase hex digits (names of temporary
/// files, per-copy keys). Internal when the kernel refuses.
Result<std::string> RandomHex(size_t n);

/// A fresh secret fit for an HTTP header and a file: `prefix` then kSecretBytes
/// random bytes in base64url (43 characters).
Result<std::string> NewSecretToken(std::string_view prefix);

/// A fresh random UUID (version 4, RFC 4122 variant) from the kernel's CSPRNG: an API
/// request id no other process or run can repeat. Internal when the kernel refuses.
Result<std::string> RandomUuid();

/// The version 4 UUID spelled by the 128 bits `hi`, `lo`, their version and variant
/// bits overwritten: for a caller that draws them from a generator of its own (a seeded
/// one, so that a test can fix them).
std::string FormatUuidV4(uint64_t hi, uint64_t lo);

/// True when `a` and `b` are equal. Takes the same time for any two strings of one
/// length; the length of the expected secret is not itself a secret.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace tpufleet
