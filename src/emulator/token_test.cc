#include "emulator/token.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "util/encoding.h"
#include "util/testing/fake_clock.h"

namespace tpufleet::emulator {
namespace {

using Json = nlohmann::json;
using std::chrono::seconds;

constexpr const char* kEmail = "runner@p.iam.gserviceaccount.com";
constexpr const char* kJwtGrant =
    "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=";

class TokenTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // RSA key generation costs tens of milliseconds: make the two keys once.
    key_ = new GeneratedServiceAccountKey(
        GenerateServiceAccountKey(kEmail, "p", "http://x/token", 1024).value());
    other_ = new GeneratedServiceAccountKey(
        GenerateServiceAccountKey(kEmail, "p", "http://x/token", 1024).value());
  }
  static void TearDownTestSuite() {
    delete key_;
    delete other_;
  }

  TokenTest() {
    AuthConfig auth;
    auth.service_account_keys.push_back(key_->accepted);
    auth.authorized_users.push_back({"cid", "csecret", "rtoken"});
    service_ = std::make_unique<TokenService>(auth, clock_);
  }

  long long Now() const {
    return std::chrono::duration_cast<seconds>(clock_.Now().time_since_epoch()).count();
  }

  Json Claims() const {
    return Json{{"iss", kEmail},
                {"scope", "https://www.googleapis.com/auth/cloud-platform"},
                {"aud", "https://oauth2.googleapis.com/token"},
                {"iat", Now()},
                {"exp", Now() + 3600}};
  }

  std::string Sign(const Json& claims, const GeneratedServiceAccountKey& key) {
    Json sa = Json::parse(key.key_json);
    return SignJwtRs256(claims.dump(), sa["private_key"].get<std::string>(),
                        sa["private_key_id"].get<std::string>())
        .value();
  }

  std::pair<int, Json> Exchange(const std::string& form) {
    TokenReply r = service_->Exchange(form);
    return {r.http_status, Json::parse(r.body)};
  }

  static GeneratedServiceAccountKey* key_;
  static GeneratedServiceAccountKey* other_;
  FakeClock clock_;
  std::unique_ptr<TokenService> service_;
};

GeneratedServiceAccountKey* TokenTest::key_ = nullptr;
GeneratedServiceAccountKey* TokenTest::other_ = nullptr;

TEST_F(TokenTest, GeneratedKeyFileLooksLikeGooglesAndItsPublicKeyMatches) {
  Json sa = Json::parse(key_->key_json);
  EXPECT_EQ(sa["type"], "service_account");
  EXPECT_EQ(sa["client_email"], kEmail);
  EXPECT_EQ(sa["token_uri"], "http://x/token");
  EXPECT_EQ(sa["private_key"].get<std::string>().rfind("-----BEGIN PRIVATE KEY-----", 0), 0u);
  EXPECT_EQ(sa["private_key_id"], key_->accepted.key_id);
  EXPECT_EQ(PublicKeyOfPrivateKey(sa["private_key"].get<std::string>()).value(),
            key_->accepted.public_key_pem);
}

TEST_F(TokenTest, ValidAssertionGetsAnAccessToken) {
  auto [status, body] = Exchange(kJwtGrant + Sign(Claims(), *key_));
  ASSERT_EQ(status, 200) << body;
  std::string token = body["access_token"];
  EXPECT_EQ(token.rfind("ya29.", 0), 0u);
  EXPECT_EQ(body["expires_in"], 3599);
  EXPECT_EQ(body["token_type"], "Bearer");
  EXPECT_EQ(body["scope"], "https://www.googleapis.com/auth/cloud-platform");
  EXPECT_TRUE(service_->IsValid(token));
  EXPECT_FALSE(service_->IsValid(token + "x"));
  clock_.Advance(seconds(3599));
  EXPECT_FALSE(service_->IsValid(token));
}

TEST_F(TokenTest, WrongKeyOrTamperedClaimsAreAnInvalidSignature) {
  Json want{{"error", "invalid_grant"}, {"error_description", "Invalid JWT Signature."}};
  EXPECT_EQ(Exchange(kJwtGrant + Sign(Claims(), *other_)), std::make_pair(400, want));
  std::string jwt = Sign(Claims(), *key_);
  size_t d1 = jwt.find('.');
  size_t d2 = jwt.find('.', d1 + 1);
  Json evil = Claims();
  evil["iss"] = "mallory@p.iam.gserviceaccount.com";
  std::string forged = jwt.substr(0, d1 + 1) + Base64UrlEncode(evil.dump()) + jwt.substr(d2);
  EXPECT_EQ(Exchange(kJwtGrant + forged), std::make_pair(400, want));
  EXPECT_EQ(Exchange(std::string(kJwtGrant) + "not.a.jwt").first, 400);
  EXPECT_EQ(Exchange(std::string(kJwtGrant)).second["error"], "invalid_request");
}

TEST_F(TokenTest, ClaimsAreChecked) {
  Json expired = Claims();
  expired["iat"] = Now() - 7200;
  expired["exp"] = Now() - 3600;
  auto [s1, b1] = Exchange(kJwtGrant + Sign(expired, *key_));
  EXPECT_EQ(s1, 400);
  EXPECT_NE(b1["error_description"].get<std::string>().find("Check your iat and exp values"),
            std::string::npos);

  Json too_long = Claims();
  too_long["exp"] = Now() + 7200;
  EXPECT_EQ(Exchange(kJwtGrant + Sign(too_long, *key_)).first, 400);

  Json stranger = Claims();
  stranger["iss"] = "someone@else.iam.gserviceaccount.com";
  EXPECT_EQ(Exchange(kJwtGrant + Sign(stranger, *key_)).second["error_description"],
            "Invalid grant: account not found");

  Json aud = Claims();
  aud["aud"] = "https://example.com/";
  EXPECT_EQ(Exchange(kJwtGrant + Sign(aud, *key_)).first, 400);

  Json legacy = Claims();  // npm gtoken's audience
  legacy["aud"] = "https://www.googleapis.com/oauth2/v4/token";
  EXPECT_EQ(Exchange(kJwtGrant + Sign(legacy, *key_)).first, 200);
}

TEST_F(TokenTest, KidPicksTheKey) {
  AuthConfig auth;
  auth.service_account_keys = {other_->accepted, key_->accepted};
  TokenService both(auth, clock_);
  EXPECT_EQ(both.Exchange(kJwtGrant + Sign(Claims(), *key_)).http_status, 200);
  EXPECT_EQ(both.Exchange(kJwtGrant + Sign(Claims(), *other_)).http_status, 200);
  AuthConfig none;
  TokenService nobody(none, clock_);
  EXPECT_EQ(nobody.Exchange(kJwtGrant + Sign(Claims(), *key_)).http_status, 400);
}

TEST_F(TokenTest, RefreshTokenGrant) {
  auto [status, body] =
      Exchange("grant_type=refresh_token&client_id=cid&client_secret=csecret&refresh_token=rtoken");
  ASSERT_EQ(status, 200);
  EXPECT_TRUE(service_->IsValid(body["access_token"].get<std::string>()));
  EXPECT_EQ(
      Exchange("grant_type=refresh_token&client_id=cid&client_secret=nope&refresh_token=rtoken"),
      std::make_pair(401, Json{{"error", "invalid_client"},
                               {"error_description", "The OAuth client was not found."}}));
  EXPECT_EQ(
      Exchange("grant_type=refresh_token&client_id=cid&client_secret=csecret&refresh_token=old")
          .second["error"],
      "invalid_grant");
  EXPECT_EQ(Exchange("grant_type=password").second["error"], "unsupported_grant_type");
  EXPECT_EQ(Exchange("").second["error"], "invalid_request");
}

}  // namespace
}  // namespace tpufleet::emulator
