// RS256 JSON Web Tokens (RFC 7515/7519) and the RSA keys behind them, on OpenSSL
// libcrypto. Google's OAuth2 endpoint takes a service account's identity as an RS256 JWT
// signed with the key file's private key (the JWT-bearer grant, RFC 7523): the GCP client
// signs one, the emulator's token endpoint verifies one. One implementation serves both.
//
// Keys are PEM text: private keys PKCS#8 ("BEGIN PRIVATE KEY", what Google's key files
// hold) or PKCS#1 ("BEGIN RSA PRIVATE KEY"), public keys SubjectPublicKeyInfo
// ("BEGIN PUBLIC KEY"). No OpenSSL type appears here.
//
// Private keys are secrets: no function here logs or puts one in a message.
//
// Thread-safety: pure functions (OpenSSL 3 is thread-safe for these calls).
#pragma once

#include <string>
#include <string_view>

#include "util/status.h"

namespace tpufleet {

/// A JWT's decoded header and claims, each JSON text.
struct DecodedJwt {
  std::string header_json;
  std::string claims_json;
};

/// Verifies the RS256 signature of the compact JWT `jwt` with the PEM public key and
/// returns its decoded header and claims. InvalidArgument when the JWT or the key is
/// malformed or the header's alg is not RS256; PermissionDenied when the signature does
/// not verify. Claims (iss, aud, exp…) are the caller's to check.
Result<DecodedJwt> VerifyJwtRs256(std::string_view jwt, std::string_view public_key_pem);

/// Signs `claims_json` as a compact RS256 JWT with the PEM private key; the header is
/// {"alg":"RS256","typ":"JWT"} plus "kid" when `kid` is not empty. InvalidArgument when
/// the key is not a PEM private key.
Result<std::string> SignJwtRs256(std::string_view claims_json, std::string_view private_key_pem,
                                 std::string_view kid = {});

/// The PEM public key (SubjectPublicKeyInfo) of a PEM private key. InvalidArgument when
/// it is not one.
Result<std::string> PublicKeyOfPrivateKey(std::string_view private_key_pem);

/// A fresh RSA private key of `bits` bits as PKCS#8 PEM, as Google writes key files.
/// A secret: write it 0600.
Result<std::string> GenerateRsaPrivateKey(int bits = 2048);

}  // namespace tpufleet
