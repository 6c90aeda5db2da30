#include "emulator/token.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "emulator/wire.h"
#include "util/encoding.h"

namespace tpufleet::emulator {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using MdCtxPtr = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

PkeyPtr ReadPublicKey(std::string_view pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) {
    return nullptr;
  }
  return PkeyPtr(PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
}

PkeyPtr ReadPrivateKey(std::string_view pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) {
    return nullptr;
  }
  return PkeyPtr(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
}

std::string BioContents(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(n));
}

Result<std::string> PublicPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PUBKEY(bio.get(), key) != 1) {
    return InternalError("cannot write a PEM public key");
  }
  return BioContents(bio.get());
}

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

Result<DecodedJwt> VerifyJwtRs256(std::string_view jwt, std::string_view public_key_pem) {
  size_t d1 = jwt.find('.');
  size_t d2 = d1 == std::string_view::npos ? d1 : jwt.find('.', d1 + 1);
  if (d2 == std::string_view::npos || jwt.find('.', d2 + 1) != std::string_view::npos) {
    return InvalidArgumentError("not a JWT: expected three dot-separated parts");
  }
  DecodedJwt out;
  TPUFLEET_ASSIGN_OR_RETURN(out.header_json, Base64UrlDecode(jwt.substr(0, d1)));
  TPUFLEET_ASSIGN_OR_RETURN(out.claims_json, Base64UrlDecode(jwt.substr(d1 + 1, d2 - d1 - 1)));
  TPUFLEET_ASSIGN_OR_RETURN(std::string signature, Base64UrlDecode(jwt.substr(d2 + 1)));
  Json header = Json::parse(out.header_json, nullptr, false);
  if (header.is_discarded() || !header.is_object() || !header.contains("alg") ||
      header["alg"] != "RS256") {
    return InvalidArgumentError("JWT header must be JSON with alg RS256");
  }
  PkeyPtr key = ReadPublicKey(public_key_pem);
  if (!key) {
    return InvalidArgumentError("not a PEM public key");
  }
  MdCtxPtr ctx(EVP_MD_CTX_new());
  std::string_view signed_part = jwt.substr(0, d2);
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1) {
    return InternalError("EVP_DigestVerifyInit failed");
  }
  int ok = EVP_DigestVerify(
      ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
      reinterpret_cast<const unsigned char*>(signed_part.data()), signed_part.size());
  if (ok != 1) {
    return PermissionDeniedError("JWT signature does not verify");
  }
  return out;
}

Result<std::string> SignJwtRs256(std::string_view claims_json, std::string_view private_key_pem,
                                 std::string_view kid) {
  PkeyPtr key = ReadPrivateKey(private_key_pem);
  if (!key) {
    return InvalidArgumentError("not a PEM private key");
  }
  Json header{{"alg", "RS256"}, {"typ", "JWT"}};
  if (!kid.empty()) {
    header["kid"] = std::string(kid);
  }
  std::string signing_input = Base64UrlEncode(header.dump()) + "." + Base64UrlEncode(claims_json);
  MdCtxPtr ctx(EVP_MD_CTX_new());
  size_t len = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &len,
                     reinterpret_cast<const unsigned char*>(signing_input.data()),
                     signing_input.size()) != 1) {
    return InternalError("cannot sign with this key");
  }
  std::string sig(len, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                     reinterpret_cast<const unsigned char*>(signing_input.data()),
                     signing_input.size()) != 1) {
    return InternalError("cannot sign with this key");
  }
  sig.resize(len);
  return signing_input + "." + Base64UrlEncode(sig);
}

Result<std::string> PublicKeyOfPrivateKey(std::string_view private_key_pem) {
  PkeyPtr key = ReadPrivateKey(private_key_pem);
  if (!key) {
    return InvalidArgumentError("not a PEM private key");
  }
  return PublicPem(key.get());
}

Result<GeneratedServiceAccountKey> GenerateServiceAccountKey(std::string_view client_email,
                                                             std::string_view project_id,
                                                             std::string_view token_uri, int bits) {
  PkeyPtr key(EVP_RSA_gen(static_cast<unsigned int>(bits)));
  if (!key) {
    return InternalError("cannot generate an RSA key");
  }
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return InternalError("cannot write a PEM private key");
  }
  std::string private_pem = BioContents(bio.get());
  GeneratedServiceAccountKey out;
  TPUFLEET_ASSIGN_OR_RETURN(out.accepted.public_key_pem, PublicPem(key.get()));
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

TokenService::TokenService(AuthConfig config, Clock& clock, uint64_t seed)
    : config_(std::move(config)), clock_(clock), rng_(seed ^ 0x70ca3e11ULL) {}

TokenReply TokenService::Issue(std::string_view scope) {
  std::string token;
  {
    std::lock_guard<std::mutex> l(mu_);
    token = "ya29.emu-" + Hex(rng_(), 16) + Hex(rng_(), 16) + Hex(rng_(), 16);
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
  auto it = issued_.find(access_token);
  return it != issued_.end() && clock_.Now() < it->second;
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
