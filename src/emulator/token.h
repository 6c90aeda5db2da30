// TokenService: the emulator's OAuth2 token endpoint (POST /token, and the legacy
// /oauth2/v4/token that npm gtoken still uses), so a client holding a service-account
// key or authorized_user credentials whose token_uri points at the emulator gets an
// access token exactly as from https://oauth2.googleapis.com/token.
//
//   grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<RS256 JWT>
//     The JWT's signature is checked (util/jwt.h) against the configured public keys
//     (AuthConfig::service_account_keys; `kid` picks a key when it names one), then
//     iss (the key's client_email), aud (a …/token URL), iat and exp (at most one hour
//     apart, not expired). Bad signature: 400 {"error":"invalid_grant",
//     "error_description":"Invalid JWT Signature."}, Google's answer.
//   grant_type=refresh_token&client_id=…&client_secret=…&refresh_token=…
//     Checked against AuthConfig::authorized_users.
//
// Success: {"access_token":"ya29.…","expires_in":3599,"token_type":"Bearer"} (plus
// "scope" when the request named one). Reference: shared/reference/tpu-api.md §7.
// Tokens come from the kernel's CSPRNG (util/secret.h): the emulator's seed makes ids
// repeatable, and a token anyone could compute from it would be no secret.
//
// The endpoint itself needs no token (a client calls it to get one), so it issues
// tokens only for credentials the emulator's owner configured (AuthConfig); with none
// configured, every request is refused.
//
// The owner's secret (AuthConfig::owner_token) can be replaced while the emulator runs
// (RotateOwner, for `tpufleet emulator token rotate`), as a real credential is revoked:
// from then on the old secret gets 401 like any stranger's token.
//
// Thread-safety: all methods may be called from any thread (an internal mutex guards
// the issued tokens and the owner's secret).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "emulator/config.h"
#include "util/clock.h"
#include "util/jwt.h"  // for callers that sign or check assertions (config, tests)
#include "util/status.h"

namespace tpufleet::emulator {

/// Lifetime Google gives an access token; clients refresh a little before it ends.
inline constexpr std::chrono::seconds kAccessTokenLifetime{3599};
/// Clock skew allowed between a JWT's iat and our clock, as Google allows some.
inline constexpr std::chrono::seconds kJwtClockSkew{300};
/// Longest exp - iat Google accepts for a JWT-bearer assertion.
inline constexpr std::chrono::seconds kJwtMaxLifetime{3600};

struct TokenReply {
  int http_status = 200;
  std::string body;  // JSON
};

class TokenService {
 public:
  TokenService(AuthConfig config, Clock& clock);
  TokenService(const TokenService&) = delete;
  TokenService& operator=(const TokenService&) = delete;

  /// Answers one POST to the token endpoint; `form_body` is
  /// application/x-www-form-urlencoded.
  TokenReply Exchange(std::string_view form_body);

  /// True when `access_token` was issued here and has not expired. Compares in
  /// constant time.
  bool IsValid(std::string_view access_token) const;

  /// True when `token` is the owner's secret: AuthConfig::owner_token until the first
  /// RotateOwner, then the newest one it made. False when there is none. Constant time.
  bool IsOwner(std::string_view token) const;

  /// Replaces the owner's secret with a fresh one (kEmulatorTokenPrefix, 256 bits from
  /// the kernel) and hands it to `publish` (the daemon writes it to STATE/token). The
  /// new secret is accepted from before `publish` runs, so a client that reads it at
  /// once is not refused; the old one is refused from when `publish` returns OK. When
  /// `publish` fails, the old secret stays and the new one is forgotten. Two rotations
  /// at once are one after the other.
  Status RotateOwner(const std::function<Status(const std::string& secret)>& publish);

 private:
  TokenReply Issue(std::string_view scope);

  const AuthConfig config_;
  Clock& clock_;
  std::mutex rotating_;  // held for a whole RotateOwner, so that rotations do not interleave
  mutable std::mutex mu_;
  std::map<std::string, Clock::WallTime, std::less<>> issued_;  // token -> expiry; guarded by mu_
  std::string owner_;     // the owner's secret; "" = none; guarded by mu_
  std::string incoming_;  // a rotation's new secret while it is published; guarded by mu_
};

/// A fresh service-account key for the emulator: the key JSON a client loads (type,
/// project_id, private_key_id, private_key, client_email, client_id, token_uri) and the
/// ServiceAccountKey the emulator's config needs to accept it. `bits` is the RSA size.
struct GeneratedServiceAccountKey {
  std::string key_json;  // a secret: write it 0600
  ServiceAccountKey accepted;
};
Result<GeneratedServiceAccountKey> GenerateServiceAccountKey(std::string_view client_email,
                                                             std::string_view project_id,
                                                             std::string_view token_uri,
                                                             int bits = 2048);

}  // namespace tpufleet::emulator
