#include "util/http_client.h"

#include <gtest/gtest.h>

namespace tpufleet {
namespace {

TEST(UrlEscape, KeepsUnreservedAndEscapesTheRest) {
  EXPECT_EQ(UrlEscape("abcXYZ019-_.~"), "abcXYZ019-_.~");
  EXPECT_EQ(UrlEscape("a b/c?d=e&f"), "a%20b%2Fc%3Fd%3De%26f");
  EXPECT_EQ(UrlEscape("\xff"), "%FF");
}

TEST(FormEncode, JoinsEscapedPairs) {
  // A JWT-bearer token request body, as the OAuth2 token endpoint expects it.
  EXPECT_EQ(FormEncode({{"grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"},
                        {"assertion", "a.b.c"}}),
            "assertion=a.b.c&grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer");
  EXPECT_EQ(FormEncode({}), "");
}

TEST(CurlHttpClient, UnreachableAddressIsUnavailableAndRedacted) {
  // Port 1 on loopback: nothing listens, the connection is refused at once.
  CurlHttpClient client;
  HttpRequest req;
  req.url = "http://127.0.0.1:1/v2/x?access_token=ya29.secretsecret";
  Result<HttpResponse> r = client.Send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.status().message().find("secretsecret"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace tpufleet
