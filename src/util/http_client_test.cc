#include "util/http_client.h"

#include <gtest/gtest.h>

namespace tpufleet {
namespace {

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
