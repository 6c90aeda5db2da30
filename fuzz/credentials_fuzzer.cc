// libFuzzer target for the Google credentials the gcp-tpu provider reads: the input is
// the body of an OAuth2 token endpoint's answer ({"access_token", "expires_in", …}),
// given under each status a token endpoint answers with, and the same bytes read as a
// key file (service_account or authorized_user JSON). A token is handed out, or one
// classified error that holds no secret; the token's lifetime never overflows the
// clock; a bad key file is InvalidArgument naming the file. Nothing crashes, throws,
// hangs or runs out of memory. Run it as fuzz/README.md says.
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "provider/gcp_credentials.h"
#include "provider/testing/scripted_http_client.h"
#include "util/testing/fake_clock.h"

namespace {

using tpufleet::Result;
using tpufleet::StatusCode;
using tpufleet::TokenSource;

// Secrets of the authorized_user file below: no message may show them.
constexpr std::string_view kClientSecret = "fuzz-client-secret-d41d8cd9";
constexpr std::string_view kRefreshToken = "1//fuzz-refresh-token-8f00b204";
const std::string kAuthorizedUser =
    std::string(R"({"type": "authorized_user", "client_id": "id",)") + R"( "client_secret": ")" +
    std::string(kClientSecret) + R"(", "refresh_token": ")" + std::string(kRefreshToken) + R"("})";

// What token endpoints answer: success, refusals, rate limits and outages.
constexpr std::array<int, 7> kStatuses = {200, 400, 401, 403, 429, 500, 503};
// Later calls come this much later: past any refresh point of a token Google gives.
constexpr std::chrono::hours kLater{2};

void Require(bool ok) {
  if (!ok) {
    std::abort();  // a broken promise is a crash
  }
}

bool Shows(std::string_view text, std::string_view secret) {
  return text.find(secret) != std::string_view::npos;
}

// The token endpoint answers `status` with `body`, twice over kLater.
void TokenAnswer(int status, const std::string& body) {
  tpufleet::ScriptedHttpClient http;
  http.Handle([status, body](const tpufleet::HttpRequest&) -> Result<tpufleet::HttpResponse> {
    return tpufleet::HttpResponse{status, {}, body};
  });
  tpufleet::FakeClock clock;
  Result<std::unique_ptr<TokenSource>> source =
      tpufleet::CredentialsFromJson(kAuthorizedUser, "adc.json", http, clock);
  Require(source.ok());
  bool echoes_secret = Shows(body, kClientSecret) || Shows(body, kRefreshToken);
  for (int call = 0; call < 2; ++call) {
    Result<std::string> token = (*source)->AccessToken();
    if (token.ok()) {
      Require(status == 200 && !token->empty());
    } else {
      Require(!token.status().message().empty());
      Require(echoes_secret || (!Shows(token.status().message(), kClientSecret) &&
                                !Shows(token.status().message(), kRefreshToken)));
      if (status == 400 || status == 401 || status == 403) {
        Require(token.status().code() == StatusCode::kPermissionDenied);
      } else {
        Require(token.status().code() == StatusCode::kUnavailable);
      }
    }
    clock.Advance(kLater);
  }
}

// The input as a key file; a source it makes asks a token endpoint that answers well.
void KeyFile(std::string_view text) {
  tpufleet::ScriptedHttpClient http;
  http.Handle([](const tpufleet::HttpRequest&) -> Result<tpufleet::HttpResponse> {
    return tpufleet::HttpResponse{
        200, {}, R"({"access_token": "ya29.fuzz", "expires_in": 3599, "token_type": "Bearer"})"};
  });
  tpufleet::FakeClock clock;
  Result<std::unique_ptr<TokenSource>> source =
      tpufleet::CredentialsFromJson(text, "key.json", http, clock);
  if (!source.ok()) {
    Require(source.status().code() == StatusCode::kInvalidArgument &&
            Shows(source.status().message(), "key.json"));
    return;
  }
  Result<std::string> token = (*source)->AccessToken();
  Require(!token.ok() || *token == "ya29.fuzz");
  Require(!(*source)->Describe().empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string body(reinterpret_cast<const char*>(data), size);
  for (int status : kStatuses) {
    TokenAnswer(status, body);
  }
  KeyFile(body);
  return 0;
}
