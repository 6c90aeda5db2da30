// How tpufleet writes the SHA-256 fingerprint of a key or a certificate: as OpenSSH
// writes a key's ("SHA256:" and the digest in unpadded standard base64), for SSH host
// keys (ssh/ssh_files.h) and for TLS certificates (of their DER bytes: serve's, which its
// clients pin). One spelling, so a user compares like with like.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace tpufleet {

/// "SHA256:" and the unpadded standard base64 of SHA-256(`bytes`).
std::string Sha256Fingerprint(std::string_view bytes);
/// Whether `text` is written as Sha256Fingerprint writes one (a 32-byte digest).
bool IsSha256Fingerprint(std::string_view text);

}  // namespace tpufleet
