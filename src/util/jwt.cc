#include "util/jwt.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <memory>

#include <nlohmann/json.hpp>

#include "util/encoding.h"

namespace tpufleet {
namespace {

using Json = nlohmann::json;

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

BioPtr MemoryBio(std::string_view pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

PkeyPtr ReadPublicKey(std::string_view pem) {
  BioPtr bio = MemoryBio(pem);
  return PkeyPtr(bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr) : nullptr);
}

PkeyPtr ReadPrivateKey(std::string_view pem) {
  BioPtr bio = MemoryBio(pem);
  return PkeyPtr(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
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

const unsigned char* Bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

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
  // The alg is pinned, never taken from the token: a forged "none" or HS256 header
  // must not choose how it is checked.
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
  if (EVP_DigestVerify(ctx.get(), Bytes(signature), signature.size(), Bytes(signed_part),
                       signed_part.size()) != 1) {
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
      EVP_DigestSign(ctx.get(), nullptr, &len, Bytes(signing_input), signing_input.size()) != 1) {
    return InternalError("cannot sign with this key");
  }
  std::string sig(len, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                     Bytes(signing_input), signing_input.size()) != 1) {
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

Result<std::string> GenerateRsaPrivateKey(int bits) {
  PkeyPtr key(EVP_RSA_gen(static_cast<unsigned int>(bits)));
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!key || !bio ||
      PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return InternalError("cannot generate an RSA key");
  }
  return BioContents(bio.get());
}

}  // namespace tpufleet
