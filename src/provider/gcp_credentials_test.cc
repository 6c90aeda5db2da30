#include "provider/gcp_credentials.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "provider/testing/scripted_http_client.h"
#include "ssh/testing/temp_dir.h"
#include "util/encoding.h"
#include "util/file.h"
#include "util/jwt.h"
#include "util/testing/fake_clock.h"

namespace tpufleet {
namespace {

using Json = nlohmann::json;
using std::chrono::seconds;

constexpr const char* kEmail = "runner@p.iam.gserviceaccount.com";
constexpr const char* kTokenUri = "http://auth.test/token";

class CredentialsTest : public ::testing::Test {
 protected:
  // RSA key generation costs tens of milliseconds: make the key once.
  static void SetUpTestSuite() { key_ = new std::string(GenerateRsaPrivateKey(1024).value()); }
  static void TearDownTestSuite() { delete key_; }

  CredentialsTest() {
    options_.env = [this](const std::string& n) { return Env(n); };
  }

  std::optional<std::string> Env(const std::string& name) const {
    auto it = env_.find(name);
    return it == env_.end() ? std::nullopt : std::optional<std::string>(it->second);
  }

  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_.path() + "/" + name;
    EXPECT_TRUE(WriteFileAtomic(path, text, 0600).ok());
    return path;
  }

  static Json ServiceAccountJson() {
    return Json{{"type", "service_account"}, {"project_id", "p"},      {"private_key_id", "kid-1"},
                {"private_key", *key_},      {"client_email", kEmail}, {"client_id", "123"},
                {"token_uri", kTokenUri}};
  }
  static Json AuthorizedUserJson() {
    return Json{{"type", "authorized_user"},
                {"client_id", "cid"},
                {"client_secret", "csecret-xyz"},
                {"refresh_token", "1//refresh-xyz"}};
  }

  static HttpResponse TokenAnswer(const std::string& token, long long expires_in = 3599) {
    return ScriptedHttpClient::Json(
        200, {{"access_token", token}, {"expires_in", expires_in}, {"token_type", "Bearer"}});
  }

  Result<std::unique_ptr<TokenSource>> Find() {
    return FindGcpCredentials(options_, http_, clock_);
  }

  // The source found; fails the test when there is none.
  std::unique_ptr<TokenSource> MustFind() {
    Result<std::unique_ptr<TokenSource>> r = Find();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : nullptr;
  }

  static std::string* key_;
  TempDir dir_;
  std::map<std::string, std::string> env_;
  CredentialOptions options_;
  FakeClock clock_;
  ScriptedHttpClient http_;
};

std::string* CredentialsTest::key_ = nullptr;

TEST_F(CredentialsTest, ServiceAccountSignsAJwtAndTradesItAtTheTokenUri) {
  options_.key_file = Write("sa.json", ServiceAccountJson().dump());
  http_.Push(TokenAnswer("ya29.first"));
  std::unique_ptr<TokenSource> source = MustFind();
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->AccessToken().value(), "ya29.first");
  EXPECT_EQ(source->Describe(),
            std::string("service account ") + kEmail + " (key file " + options_.key_file + ")");

  ASSERT_EQ(http_.request_count(), 1u);
  HttpRequest req = http_.requests()[0];
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.url, kTokenUri);
  EXPECT_EQ(req.headers["Content-Type"], "application/x-www-form-urlencoded");
  std::map<std::string, std::string> form = ParseQueryString(req.body);
  EXPECT_EQ(form["grant_type"], "urn:ietf:params:oauth:grant-type:jwt-bearer");
  Result<DecodedJwt> jwt = VerifyJwtRs256(form["assertion"], PublicKeyOfPrivateKey(*key_).value());
  ASSERT_TRUE(jwt.ok()) << jwt.status().ToString();
  EXPECT_EQ(Json::parse(jwt->header_json)["kid"], "kid-1");
  long long now = std::chrono::duration_cast<seconds>(clock_.Now().time_since_epoch()).count();
  EXPECT_EQ(Json::parse(jwt->claims_json),
            (Json{{"iss", kEmail},
                  {"scope", "https://www.googleapis.com/auth/cloud-platform"},
                  {"aud", kTokenUri},
                  {"iat", now},
                  {"exp", now + 3600}}));
}

TEST_F(CredentialsTest, TokenIsCachedUntilFiveMinutesBeforeItExpires) {
  options_.key_file = Write("sa.json", ServiceAccountJson().dump());
  http_.Push(TokenAnswer("ya29.first"));
  http_.Push(TokenAnswer("ya29.second"));
  std::unique_ptr<TokenSource> source = MustFind();
  EXPECT_EQ(source->AccessToken().value(), "ya29.first");
  clock_.Advance(seconds(3599 - 300 - 1));
  EXPECT_EQ(source->AccessToken().value(), "ya29.first");
  EXPECT_EQ(http_.request_count(), 1u);
  clock_.Advance(seconds(2));
  EXPECT_EQ(source->AccessToken().value(), "ya29.second");
  EXPECT_EQ(http_.request_count(), 2u);
}

// Issue 14: a token revoked before its time. The API's 401 (TokenSource::Refused)
// drops the cached token, so the next call fetches a fresh one instead of sending the
// revoked one until it would have expired.
TEST_F(CredentialsTest, ARefusedTokenIsFetchedAgainAtTheNextCall) {
  options_.key_file = Write("sa.json", ServiceAccountJson().dump());
  http_.Push(TokenAnswer("ya29.revoked"));
  http_.Push(TokenAnswer("ya29.fresh"));
  std::unique_ptr<TokenSource> source = MustFind();
  EXPECT_EQ(source->AccessToken().value(), "ya29.revoked");
  source->Refused();
  EXPECT_EQ(source->AccessToken().value(), "ya29.fresh");
  EXPECT_EQ(source->AccessToken().value(), "ya29.fresh");
  EXPECT_EQ(http_.request_count(), 2u);
}

TEST_F(CredentialsTest, ShortLivedTokensAreKeptForHalfTheirLife) {
  options_.key_file = Write("sa.json", ServiceAccountJson().dump());
  http_.Push(TokenAnswer("ya29.short", 120));
  http_.Push(TokenAnswer("ya29.next"));
  std::unique_ptr<TokenSource> source = MustFind();
  EXPECT_EQ(source->AccessToken().value(), "ya29.short");
  clock_.Advance(seconds(59));
  EXPECT_EQ(source->AccessToken().value(), "ya29.short");
  clock_.Advance(seconds(1));
  EXPECT_EQ(source->AccessToken().value(), "ya29.next");
}

TEST_F(CredentialsTest, TransientRefreshFailureKeepsTheOldTokenWhileItLives) {
  options_.key_file = Write("sa.json", ServiceAccountJson().dump());
  http_.Push(TokenAnswer("ya29.first"));
  std::unique_ptr<TokenSource> source = MustFind();
  EXPECT_EQ(source->AccessToken().value(), "ya29.first");
  clock_.Advance(seconds(3400));  // past the refresh point, before expiry
  http_.Push(ScriptedHttpClient::Json(503, Json::object()));
  EXPECT_EQ(source->AccessToken().value(), "ya29.first");
  clock_.Advance(seconds(300));                   // expired now
  Result<std::string> r = source->AccessToken();  // nothing scripted: connection refused
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find(kTokenUri), std::string::npos) << r.status().message();
}

TEST_F(CredentialsTest, ConcurrentCallersShareOneFetch) {
  options_.key_file = Write("sa.json", ServiceAccountJson().dump());
  http_.Handle([](const HttpRequest&) -> Result<HttpResponse> { return TokenAnswer("ya29.x"); });
  std::unique_ptr<TokenSource> source = MustFind();
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] { EXPECT_EQ(source->AccessToken().value(), "ya29.x"); });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  EXPECT_EQ(http_.request_count(), 1u);
}

TEST_F(CredentialsTest, RefusedKeyNamesTheFileTheEndpointAndGooglesReason) {
  options_.key_file = Write("sa.json", ServiceAccountJson().dump());
  http_.Push(ScriptedHttpClient::Json(
      400, {{"error", "invalid_grant"}, {"error_description", "Invalid JWT Signature."}}));
  std::unique_ptr<TokenSource> source = MustFind();
  Result<std::string> r = source->AccessToken();
  ASSERT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  std::string m = r.status().message();
  EXPECT_NE(m.find(options_.key_file), std::string::npos) << m;
  EXPECT_NE(m.find(kTokenUri), std::string::npos) << m;
  EXPECT_NE(m.find("invalid_grant: Invalid JWT Signature."), std::string::npos) << m;
  EXPECT_EQ(m.find("PRIVATE KEY"), std::string::npos) << m;
}

TEST_F(CredentialsTest, GoogleApplicationCredentialsIsUsedUnlessTheOptionNamesAFile) {
  env_["GOOGLE_APPLICATION_CREDENTIALS"] = Write("env.json", ServiceAccountJson().dump());
  Json other = ServiceAccountJson();
  other["client_email"] = "other@p.iam.gserviceaccount.com";
  EXPECT_NE(MustFind()->Describe().find(kEmail), std::string::npos);
  options_.key_file = Write("opt.json", other.dump());
  EXPECT_NE(MustFind()->Describe().find("other@p"), std::string::npos);
}

TEST_F(CredentialsTest, AuthorizedUserFromTheWellKnownFileTradesItsRefreshToken) {
  env_["CLOUDSDK_CONFIG"] = dir_.path();
  std::string path = Write("application_default_credentials.json", AuthorizedUserJson().dump());
  http_.Push(TokenAnswer("ya29.user"));
  std::unique_ptr<TokenSource> source = MustFind();
  EXPECT_EQ(source->Describe(), "authorized-user credentials " + path);
  EXPECT_EQ(source->AccessToken().value(), "ya29.user");
  HttpRequest req = http_.requests().at(0);
  EXPECT_EQ(req.url, "https://oauth2.googleapis.com/token");
  EXPECT_EQ(ParseQueryString(req.body),
            (std::map<std::string, std::string>{{"grant_type", "refresh_token"},
                                                {"client_id", "cid"},
                                                {"client_secret", "csecret-xyz"},
                                                {"refresh_token", "1//refresh-xyz"}}));
}

TEST_F(CredentialsTest, WellKnownFileUnderHomeAndItsTokenUri) {
  env_["HOME"] = dir_.path();
  ASSERT_EQ(::mkdir((dir_.path() + "/.config").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((dir_.path() + "/.config/gcloud").c_str(), 0700), 0);
  Json user = AuthorizedUserJson();
  user["token_uri"] = kTokenUri;
  Write(".config/gcloud/application_default_credentials.json", user.dump());
  http_.Push(TokenAnswer("ya29.user"));
  EXPECT_EQ(MustFind()->AccessToken().value(), "ya29.user");
  EXPECT_EQ(http_.requests().at(0).url, kTokenUri);
}

TEST_F(CredentialsTest, RefusedRefreshTokenNeverShowsTheSecrets) {
  options_.key_file = Write("user.json", AuthorizedUserJson().dump());
  http_.Push(ScriptedHttpClient::Json(
      400,
      {{"error", "invalid_grant"}, {"error_description", "Token has been expired or revoked."}}));
  Result<std::string> r = MustFind()->AccessToken();
  ASSERT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  std::string m = r.status().message();
  EXPECT_NE(m.find("Token has been expired or revoked."), std::string::npos) << m;
  EXPECT_NE(m.find("gcloud auth application-default login"), std::string::npos) << m;
  EXPECT_EQ(m.find("refresh-xyz"), std::string::npos) << m;
  EXPECT_EQ(m.find("csecret"), std::string::npos) << m;
}

TEST_F(CredentialsTest, AccessTokenFileIsReadOnEveryCall) {
  env_["CLOUDSDK_AUTH_ACCESS_TOKEN_FILE"] = Write("token", "ya29.one\n");
  std::unique_ptr<TokenSource> source = MustFind();
  EXPECT_EQ(source->AccessToken().value(), "ya29.one");
  Write("token", "ya29.two");
  EXPECT_EQ(source->AccessToken().value(), "ya29.two");
  Write("token", "  \n");
  EXPECT_EQ(source->AccessToken().status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(http_.request_count(), 0u);
}

TEST_F(CredentialsTest, AccessTokenFileOptionBeatsTheEnvironment) {
  env_["GOOGLE_APPLICATION_CREDENTIALS"] = Write("sa.json", ServiceAccountJson().dump());
  options_.access_token_file = Write("token", "ya29.opt");
  EXPECT_EQ(MustFind()->AccessToken().value(), "ya29.opt");
}

TEST_F(CredentialsTest, MetadataServerIsProbedThenAskedForTheDefaultAccount) {
  env_["GCE_METADATA_HOST"] = "127.0.0.1:8089";
  http_.Push(ScriptedHttpClient::Json(200, Json::object(), {{"metadata-flavor", "Google"}}));
  http_.Push(TokenAnswer("ya29.vm"));
  std::unique_ptr<TokenSource> source = MustFind();
  EXPECT_EQ(source->AccessToken().value(), "ya29.vm");
  std::vector<HttpRequest> reqs = http_.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].url, "http://127.0.0.1:8089/computeMetadata/v1/instance");
  EXPECT_EQ(reqs[0].headers["Metadata-Flavor"], "Google");
  EXPECT_EQ(reqs[0].timeout, kMetadataProbeTimeout);
  EXPECT_EQ(reqs[1].url,
            "http://127.0.0.1:8089/computeMetadata/v1/instance/service-accounts/default/token");
  EXPECT_EQ(reqs[1].headers["Metadata-Flavor"], "Google");
}

TEST_F(CredentialsTest, NamedMetadataHostThatIsNotOneIsAnError) {
  env_["GCE_METADATA_HOST"] = "127.0.0.1:8089";
  http_.Push(ScriptedHttpClient::Json(200, Json::object()));  // no Metadata-Flavor
  Result<std::unique_ptr<TokenSource>> r = Find();
  ASSERT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(r.status().message().find("names 127.0.0.1:8089"), std::string::npos);
}

TEST_F(CredentialsTest, NoCredentialsExplainsEveryWayToGiveSome) {
  Result<std::unique_ptr<TokenSource>> r = Find();
  ASSERT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  std::string m = r.status().message();
  for (const char* hint :
       {"gcloud auth application-default login", "GOOGLE_APPLICATION_CREDENTIALS",
        "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE", "169.254.169.254"}) {
    EXPECT_NE(m.find(hint), std::string::npos) << hint << " not in: " << m;
  }
  ASSERT_EQ(http_.request_count(), 1u);  // the probe, and nothing else
  EXPECT_EQ(http_.requests()[0].timeout, kMetadataProbeTimeout);
}

TEST_F(CredentialsTest, MalformedFilesNameTheFileAndTheField) {
  struct Case {
    std::string text;
    std::string expect;
  };
  Json no_email = ServiceAccountJson();
  no_email.erase("client_email");
  Json bad_key = ServiceAccountJson();
  bad_key["private_key"] = "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n";
  Json no_refresh = AuthorizedUserJson();
  no_refresh.erase("refresh_token");
  Json external = Json{{"type", "external_account"}};
  for (const Case& c : std::vector<Case>{
           {"{not json", "is not a JSON object"},
           {"{}", "field 'type'"},
           {no_email.dump(), "field 'client_email'"},
           {bad_key.dump(), "field 'private_key' is not a PEM private key"},
           {no_refresh.dump(), "field 'refresh_token'"},
           {external.dump(), "\"external_account\""},
       }) {
    options_.key_file = Write("bad.json", c.text);
    Result<std::unique_ptr<TokenSource>> r = Find();
    ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_NE(r.status().message().find(options_.key_file), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().message().find("nope"), std::string::npos);
  }
}

TEST_F(CredentialsTest, MissingNamedFilesAreInvalidArgument) {
  env_["GOOGLE_APPLICATION_CREDENTIALS"] = dir_.path() + "/absent.json";
  Result<std::unique_ptr<TokenSource>> r = Find();
  ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("GOOGLE_APPLICATION_CREDENTIALS"), std::string::npos);
  EXPECT_NE(r.status().message().find("absent.json"), std::string::npos);
  env_.clear();
  env_["CLOUDSDK_AUTH_ACCESS_TOKEN_FILE"] = dir_.path() + "/absent-token";
  EXPECT_EQ(Find().status().code(), StatusCode::kInvalidArgument);
}

// credentials_fuzzer: a token endpoint's expires_in was trusted whole. A huge integer
// overflowed the clock arithmetic (signed overflow, so the token was refetched on every
// call or kept for ever, by chance), and a huge float was cast to an integer (undefined
// behaviour). A lifetime is now between 0 and kMaxTokenLifetime (12 h).
TEST(Issue10, TokenLifetimeFromTheEndpointIsBounded) {
  struct Case {
    const char* expires_in;
    bool kept_a_minute;  // false: a lifetime of 0, so every call fetches
  };
  for (Case c : {Case{"9223372036854775807", true}, Case{"18446744073709551615", true},
                 Case{"1e300", true}, Case{"3.9e10", true}, Case{"1.7976931348623157e308", true},
                 Case{"-9223372036854775808", false}, Case{"-1e300", false}, Case{"0.5", false}}) {
    SCOPED_TRACE(c.expires_in);
    ScriptedHttpClient http;
    FakeClock clock;
    std::unique_ptr<TokenSource> source =
        CredentialsFromJson(R"({"type": "authorized_user", "client_id": "c",)"
                            R"( "client_secret": "s", "refresh_token": "r"})",
                            "adc.json", http, clock)
            .value();
    http.Push(HttpResponse{
        200,
        {},
        std::string(R"({"access_token": "ya29.first", "expires_in": )") + c.expires_in + "}"});
    for (const char* next : {"ya29.second", "ya29.third"}) {
      http.Push(ScriptedHttpClient::Json(200, {{"access_token", next}, {"expires_in", 3599}}));
    }
    EXPECT_EQ(source->AccessToken().value(), "ya29.first");
    clock.Advance(std::chrono::minutes(1));
    EXPECT_EQ(source->AccessToken().value(), c.kept_a_minute ? "ya29.first" : "ya29.second");
    clock.Advance(std::chrono::hours(24));  // never kept this long
    EXPECT_EQ(source->AccessToken().value(), c.kept_a_minute ? "ya29.second" : "ya29.third");
  }
}

TEST_F(CredentialsTest, TokenEndpointTroubleIsUnavailable) {
  options_.key_file = Write("sa.json", ServiceAccountJson().dump());
  std::unique_ptr<TokenSource> source = MustFind();
  http_.Push(ScriptedHttpClient::Json(503, Json::object()));
  EXPECT_EQ(source->AccessToken().status().code(), StatusCode::kUnavailable);
  http_.Push(ScriptedHttpClient::Json(200, {{"token_type", "Bearer"}}));
  EXPECT_EQ(source->AccessToken().status().code(), StatusCode::kUnavailable);
  http_.Push(TimeoutError("timed out"));
  EXPECT_EQ(source->AccessToken().status().code(), StatusCode::kTimeout);
}

}  // namespace
}  // namespace tpufleet
