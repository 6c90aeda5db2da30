#include "util/jwt.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "util/encoding.h"

namespace tpufleet {
namespace {

using Json = nlohmann::json;

class JwtTest : public ::testing::Test {
 protected:
  // RSA key generation costs tens of milliseconds: make the two keys once.
  static void SetUpTestSuite() {
    key_ = new std::string(GenerateRsaPrivateKey(1024).value());
    other_ = new std::string(GenerateRsaPrivateKey(1024).value());
  }
  static void TearDownTestSuite() {
    delete key_;
    delete other_;
  }
  static std::string PublicKey(const std::string& private_pem) {
    return PublicKeyOfPrivateKey(private_pem).value();
  }

  static std::string* key_;
  static std::string* other_;
};

std::string* JwtTest::key_ = nullptr;
std::string* JwtTest::other_ = nullptr;

TEST_F(JwtTest, GeneratedKeysArePkcs8AndDistinct) {
  EXPECT_EQ(key_->rfind("-----BEGIN PRIVATE KEY-----", 0), 0u);
  EXPECT_EQ(PublicKey(*key_).rfind("-----BEGIN PUBLIC KEY-----", 0), 0u);
  EXPECT_NE(PublicKey(*key_), PublicKey(*other_));
  EXPECT_EQ(PublicKeyOfPrivateKey("not a key").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(JwtTest, SignAndVerify) {
  std::string jwt = SignJwtRs256(R"({"sub":"x"})", *key_).value();
  Result<DecodedJwt> d = VerifyJwtRs256(jwt, PublicKey(*key_));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->claims_json, R"({"sub":"x"})");
  EXPECT_EQ(Json::parse(d->header_json), (Json{{"alg", "RS256"}, {"typ", "JWT"}}));
}

TEST_F(JwtTest, KidGoesInTheHeader) {
  std::string jwt = SignJwtRs256("{}", *key_, "k1").value();
  EXPECT_EQ(Json::parse(VerifyJwtRs256(jwt, PublicKey(*key_))->header_json),
            (Json{{"alg", "RS256"}, {"typ", "JWT"}, {"kid", "k1"}}));
}

TEST_F(JwtTest, AnotherKeyOrTamperedClaimsDoNotVerify) {
  std::string jwt = SignJwtRs256(R"({"iss":"alice"})", *key_).value();
  EXPECT_EQ(VerifyJwtRs256(jwt, PublicKey(*other_)).status().code(), StatusCode::kPermissionDenied);
  size_t d1 = jwt.find('.');
  size_t d2 = jwt.find('.', d1 + 1);
  std::string forged =
      jwt.substr(0, d1 + 1) + Base64UrlEncode(R"({"iss":"mallory"})") + jwt.substr(d2);
  EXPECT_EQ(VerifyJwtRs256(forged, PublicKey(*key_)).status().code(),
            StatusCode::kPermissionDenied);
}

TEST_F(JwtTest, MalformedInputIsInvalidArgument) {
  std::string jwt = SignJwtRs256("{}", *key_).value();
  EXPECT_EQ(VerifyJwtRs256(jwt, "garbage").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(VerifyJwtRs256("a.b", PublicKey(*key_)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(VerifyJwtRs256("a.b.c.d", PublicKey(*key_)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(VerifyJwtRs256("a!.b.c", PublicKey(*key_)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(SignJwtRs256("{}", "not a key").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(JwtTest, UnsignedOrOtherAlgorithmsAreRefused) {
  std::string none = Base64UrlEncode(R"({"alg":"none"})") + "." + Base64UrlEncode("{}") + ".";
  EXPECT_EQ(VerifyJwtRs256(none, PublicKey(*key_)).status().code(), StatusCode::kInvalidArgument);
  // An HS256 header on an otherwise valid RS256 token still does not pass.
  std::string jwt = SignJwtRs256("{}", *key_).value();
  std::string hs = Base64UrlEncode(R"({"alg":"HS256"})") + jwt.substr(jwt.find('.'));
  EXPECT_FALSE(VerifyJwtRs256(hs, PublicKey(*key_)).ok());
}

}  // namespace
}  // namespace tpufleet
