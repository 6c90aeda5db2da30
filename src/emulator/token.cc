#include "emulator/token.h"

#include <random>

#include <nlohmann/json.hpp>

#include "emulator/locator.h"
#include "emulator/wire.h"
#include "util/encoding.h"
#include "util/jwt.h"
#include "util/secret.h"

namespace tpufleet::emulator {
namespace {

TokenReply OAuthError(int status, std::string_view error, std::string_view description) {
  Json j{{"error", std::string(error)}, {"error_description", std::string(description)}};
  return {status, j.dump()};
}

// Google's own words for the JWT checks.
constexpr std::string_view kBadSignature = "Invalid JWT Signature.";
constexpr std::string_view kBadTimes =
    "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. "
    "Check your iat and exp values in the JWT claim.";

}  // namespace

Result<GeneratedServiceAccountKey> GenerateServiceAccountKey(std::string_view client_email,
                                                             std::string_view project_id,
                                                             std::string_view token_uri, int bits) {
  GeneratedServiceAccountKey out;
  TPUFLEET_ASSIGN_OR_RETURN(std::string private_pem, GenerateRsaPrivateKey(bits));
  TPUFLEET_ASSIGN_OR_RETURN(out.accepted.public_key_pem, PublicKeyOfPrivateKey(private_pem));
  std::random_device rd;
  uint64_t r = (static_cast<uint64_t>(rd()) << 32) | rd();
  out.accepted.client_email = std::string(client_email);
  out.accepted.key_id = Hex(r, 16) + Hex(r * 0x9e3779b97f4a7c15ULL, 24);
  Json j{{"type", "service_account"},
         {"project_id", std::string(project_id)},
         {"private_key_id", out.accepted.key_id},
         {"private_key", private_pem},
         {"client_email", std::string(client_email)},
         {"client_id", std::to_string(100000000000000000ULL + r % 899999999999999999ULL)},
         {"auth_uri", "https://accounts.google.com/o/oauth2/auth"},
         {"token_uri", std::string(token_uri)}};
  out.key_json = j.dump(2) + "\n";
  return out;
}

TokenService::TokenService(AuthConfig config, Clock& clock)
    : config_(std::move(config)), clock_(clock), owner_(config_.owner_token) {}

TokenReply TokenService::Issue(std::string_view scope) {
  Result<std::string> fresh = NewSecretToken("ya29.emu-");
  if (!fresh.ok()) {
    return OAuthError(500, "internal_failure", "Internal error encountered.");
  }
  std::string token = *std::move(fresh);
  {
    std::lock_guard<std::mutex> l(mu_);
    Clock::WallTime now = clock_.Now();
    issued_[token] = now + kAccessTokenLifetime;
    // Forget long-expired tokens so a long run does not grow without bound.
    for (auto it = issued_.begin(); it != issued_.end();) {
      it = it->second < now ? issued_.erase(it) : std::next(it);
    }
  }
  Json j{{"access_token", token},
         {"expires_in", kAccessTokenLifetime.count()},
         {"token_type", "Bearer"}};
  if (!scope.empty()) {
    j["scope"] = std::string(scope);
  }
  return {200, j.dump()};
}

bool TokenService::IsValid(std::string_view access_token) const {
  std::lock_guard<std::mutex> l(mu_);
  // A scan, not a lookup: a map's comparisons would tell a timing caller how much of a
  // guess matches. The map holds only unexpired tokens of configured clients.
  bool valid = false;
  Clock::WallTime now = clock_.Now();
  for (const auto& [token, expiry] : issued_) {
    valid = (ConstantTimeEquals(token, access_token) && now < expiry) || valid;
  }
  return valid;
}

bool TokenService::IsOwner(std::string_view token) const {
  std::lock_guard<std::mutex> l(mu_);
  bool owner = !owner_.empty() && ConstantTimeEquals(token, owner_);
  bool incoming = !incoming_.empty() && ConstantTimeEquals(token, incoming_);
  return owner || incoming;
}

Status TokenService::RotateOwner(const std::function<Status(const std::string& secret)>& publish) {
  std::lock_guard<std::mutex> rotation(rotating_);
  TPUFLEET_ASSIGN_OR_RETURN(std::string fresh, NewSecretToken(kEmulatorTokenPrefix));
  {
    std::lock_guard<std::mutex> l(mu_);
    incoming_ = fresh;
  }
  Status published = publish(fresh);
  std::lock_guard<std::mutex> l(mu_);
  if (published.ok()) {
    owner_ = std::move(fresh);
  }
  incoming_.clear();
  return published;
}

TokenReply TokenService::Exchange(std::string_view form_body) {
  std::map<std::string, std::string> form = ParseQueryString(form_body);
  const std::string& grant = form["grant_type"];
  if (grant == "urn:ietf:params:oauth:grant-type:jwt-bearer") {
    const std::string& assertion = form["assertion"];
    if (assertion.empty()) {
      return OAuthError(400, "invalid_request", "Missing required parameter: assertion");
    }
    std::string kid;
    size_t dot = assertion.find('.');
    if (Result<std::string> h = Base64UrlDecode(std::string_view(assertion).substr(0, dot));
        h.ok()) {
      Json header = Json::parse(*h, nullptr, false);
      if (header.is_object() && header.contains("kid") && header["kid"].is_string()) {
        kid = header["kid"].get<std::string>();
      }
    }
    const ServiceAccountKey* matched = nullptr;
    DecodedJwt decoded;
    for (const ServiceAccountKey& key : config_.service_account_keys) {
      if (!kid.empty() && !key.key_id.empty() && key.key_id != kid) {
        continue;
      }
      Result<DecodedJwt> r = VerifyJwtRs256(assertion, key.public_key_pem);
      if (r.ok()) {
        matched = &key;
        decoded = std::move(r).value();
        break;
      }
    }
    if (matched == nullptr) {
      return OAuthError(400, "invalid_grant", kBadSignature);
    }
    Json claims = Json::parse(decoded.claims_json, nullptr, false);
    if (!claims.is_object()) {
      return OAuthError(400, "invalid_grant", "Invalid JWT: the claim set is not a JSON object.");
    }
    std::string iss = claims.value("iss", std::string());
    if (!matched->client_email.empty() && iss != matched->client_email) {
      return OAuthError(400, "invalid_grant", "Invalid grant: account not found");
    }
    std::string aud =
        claims.contains("aud") && claims["aud"].is_string() ? claims["aud"].get<std::string>() : "";
    if (!(aud.size() >= 6 && aud.substr(aud.size() - 6) == "/token")) {
      return OAuthError(400, "invalid_grant",
                        "Invalid JWT: Failed audience check. The right audience is "
                        "https://oauth2.googleapis.com/token");
    }
    if (!claims.contains("iat") || !claims["iat"].is_number() || !claims.contains("exp") ||
        !claims["exp"].is_number()) {
      return OAuthError(400, "invalid_grant", kBadTimes);
    }
    long long now =
        std::chrono::duration_cast<std::chrono::seconds>(clock_.Now().time_since_epoch()).count();
    long long iat = claims["iat"].get<long long>();
    long long exp = claims["exp"].get<long long>();
    if (exp <= now || iat > now + kJwtClockSkew.count() || exp <= iat ||
        exp - iat > kJwtMaxLifetime.count()) {
      return OAuthError(400, "invalid_grant", kBadTimes);
    }
    return Issue(claims.value("scope", std::string()));
  }
  if (grant == "refresh_token") {
    const AuthorizedUser* client = nullptr;
    for (const AuthorizedUser& u : config_.authorized_users) {
      if (u.client_id == form["client_id"]) {
        client = &u;
        break;
      }
    }
    if (client == nullptr || client->client_secret != form["client_secret"]) {
      return OAuthError(401, "invalid_client", "The OAuth client was not found.");
    }
    if (client->refresh_token != form["refresh_token"]) {
      return OAuthError(400, "invalid_grant", "Bad Request");
    }
    return Issue(form["scope"]);
  }
  if (grant.empty()) {
    return OAuthError(400, "invalid_request", "Missing required parameter: grant_type");
  }
  return OAuthError(400, "unsupported_grant_type", "Invalid grant_type: " + grant);
}

}  // namespace tpufleet::emulator
