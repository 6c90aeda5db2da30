// The fingerprint of a PEM certificate, read without a TLS library: `tpufleet invite`
// reads serve's certificate file (server/tls_identity.h) for the fingerprint its invite
// carries, in the one spelling of util/fingerprint.h, from a program that links no
// OpenSSL certificate code.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "util/status.h"

namespace tpufleet {

/// The Sha256Fingerprint of the first certificate of PEM text `pem` (its DER bytes, the
/// base64 between "-----BEGIN CERTIFICATE-----" and "-----END CERTIFICATE-----"): what
/// serve logs and its clients pin. InvalidArgument when there is no such block or its
/// base64 is broken.
Result<std::string> PemCertificateFingerprint(std::string_view pem);

}  // namespace tpufleet
