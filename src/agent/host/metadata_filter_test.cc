#include "agent/host/metadata_filter.h"

#include <gtest/gtest.h>

namespace tpufleet::agent::host {
namespace {

MetadataVerdict VerdictFor(const std::string& target) {
  ProxiedHead h;
  h.method = "GET";
  h.target = target;
  return DecideMetadataRequest(h);
}

TEST(MetadataFilter, WhatFrameworksReadPasses) {
  for (const char* target :
       {"/", "/computeMetadata/v1/instance/attributes/agent-worker-number",
        "/computeMetadata/v1/instance/attributes/worker-network-endpoints",
        "/computeMetadata/v1/instance/attributes/tpu-env",
        "/computeMetadata/v1/instance/attributes/accelerator-type?alt=json",
        "/computeMetadata/v1/instance/preempted?wait_for_change=true&timeout_sec=60",
        "/computeMetadata/v1/project/project-id", "/computeMetadata/v1/?recursive=true",
        "/computeMetadata/v1/instance/service-accounts/",
        "/computeMetadata/v1/instance/service-accounts/default/",
        "/computeMetadata/v1/instance/service-accounts/default/?recursive=true",
        "/computeMetadata/v1/instance/service-accounts/default/email",
        "/computeMetadata/v1/instance/service-accounts/default/scopes",
        "/computeMetadata/v1/instance/service-accounts/default/aliases"}) {
    EXPECT_TRUE(VerdictFor(target).allow) << target;
  }
}

TEST(MetadataFilter, TokensAndIdentityAreRefusedHoweverSpelled) {
  for (const char* target : {
           "/computeMetadata/v1/instance/service-accounts/default/token",
           "/computeMetadata/v1/instance/service-accounts/default/token?scopes=a,b",
           "/computeMetadata/v1/instance/service-accounts/default/identity?audience=x",
           "/computeMetadata/v1/instance/service-accounts/sa@p.iam.gserviceaccount.com/token",
           "/computeMetadata/v1/instance/service-accounts/default/token/",
           "/computeMetadata/v1beta1/instance/service-accounts/default/token",
           "/0.1/meta-data/service-accounts/default/acquire",
           "//computeMetadata//v1//instance//service-accounts//default//token",
           "/computeMetadata/v1/instance/attributes/../service-accounts/default/token",
           "/computeMetadata/v1/instance/./service-accounts/default/./token",
           "/computeMetadata/v1/instance/service-accounts/default/%74oken",
           "/computeMetadata/v1/instance/service%2Daccounts/default/token",
           "/computeMetadata/v1/instance/service-accounts%2Fdefault%2Ftoken",
           "/computeMetadata/v1/instance/service-accounts/default/%252e%252e/default/token",
           "/computeMetadata/v1/instance/service-accounts/default/%2574oken",
           "/computeMetadata/v1/instance\\service-accounts\\default\\token",
           "/computeMetadata/v1/instance/Service-Accounts/default/TOKEN",
           "/computeMetadata/v1/instance/service-accounts/default/token;x=y",
           "/computeMetadata/v1/instance/service-accounts/default/email/../token",
           "/computeMetadata/v1/instance/service-accounts/default/unknown-new-leaf",
       }) {
    MetadataVerdict v = VerdictFor(target);
    EXPECT_FALSE(v.allow) << target;
    EXPECT_EQ(v.code, 403) << target;
  }
  EXPECT_EQ(VerdictFor("/computeMetadata/v1/instance/service-accounts/default/token").what,
            "the service account's token");
}

TEST(MetadataFilter, WhatCannotBeReadIsRefused) {
  for (const char* target :
       {"http://169.254.169.254/computeMetadata/v1/instance/"
        "service-accounts/default/token",
        "*", "", "/a#b", "/computeMetadata/v1/instance/%00token",
        "/computeMetadata/v1/instance/service-accounts/default/%C3%A9", "/%25252525252574oken"}) {
    MetadataVerdict v = VerdictFor(target);
    EXPECT_FALSE(v.allow) << target;
    EXPECT_EQ(v.code, 400) << target;
  }
}

TEST(MetadataFilter, OnlyGetWithoutABody) {
  ProxiedHead h;
  h.method = "PUT";
  h.target = "/computeMetadata/v1/instance/guest-attributes/hostkeys/ssh-ed25519";
  EXPECT_EQ(DecideMetadataRequest(h).code, 405);
  h.method = "HEAD";
  EXPECT_EQ(DecideMetadataRequest(h).code, 405);
  h.method = "GET";
  h.has_body = true;
  EXPECT_EQ(DecideMetadataRequest(h).code, 400);
}

TEST(MetadataFilter, NormalizedSegments) {
  Result<std::vector<std::string>> s = NormalizedSegments("/a/./b//C/../d;x/%2e%2e/e?q=1");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, (std::vector<std::string>{"a", "b", "e"}));
  s = NormalizedSegments("/../../x");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, std::vector<std::string>{"x"});
}

TEST(MetadataFilter, ParsesHeadsKeepingHeadersAsTheyCame) {
  Result<ProxiedHead> h = ParseProxiedHead(
      "GET /computeMetadata/v1/ HTTP/1.1\r\nHost: metadata.google.internal\r\n"
      "Metadata-Flavor: Google\r\nX-Forwarded-For: 1.2.3.4\r\nContent-Length: 0\r\n\r\n");
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->method, "GET");
  EXPECT_EQ(h->target, "/computeMetadata/v1/");
  ASSERT_EQ(h->headers.size(), 4u);
  EXPECT_EQ(h->headers[1], (std::pair<std::string, std::string>{"Metadata-Flavor", "Google"}));
  EXPECT_EQ(h->headers[2].first, "X-Forwarded-For");
  EXPECT_FALSE(h->has_body);
  h = ParseProxiedHead("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->has_body);
  EXPECT_FALSE(ParseProxiedHead("GET /\r\n\r\n").ok());
  EXPECT_FALSE(ParseProxiedHead("GET / HTTP/1.1\r\nno colon\r\n\r\n").ok());
}

TEST(MetadataFilter, CredentialsInAnAnswerAreSeen) {
  EXPECT_TRUE(CarriesCredential(R"({"access_token":"x","expires_in":3599})"));
  EXPECT_TRUE(CarriesCredential("ya29.c.abc"));
  EXPECT_FALSE(CarriesCredential(R"({"default":{"email":"sa@p","scopes":["x"]}})"));
}

TEST(MetadataFilter, TheRefusalNamesTpufleetAndTheAccount) {
  EXPECT_EQ(RefusalText(VerdictFor("/computeMetadata/v1/instance/service-accounts/default/token"),
                        "milo"),
            "tpufleet: the metadata server does not give the service account's token to "
            "milo, an account without sudo on this node (the fleet's admin can give it "
            "sudo)\n");
}

}  // namespace
}  // namespace tpufleet::agent::host
