#include "emulator/api_server.h"

#include <regex>
#include <set>
#include <tuple>

#include "api/emulator.h"
#include "core/node_state.h"
#include "emulator/testing/api_fixture.h"
#include "emulator/token.h"

namespace tpufleet::emulator {
namespace {

class ApiServerTest : public ApiFixture {};

TEST_F(ApiServerTest, LocationsAreServedUnderV1AndV2) {
  Reply v2 = Get("/v2/projects/p/locations");
  Reply v1 = Get("/v1/projects/p/locations?$alt=json;enum-encoding=int");
  ASSERT_EQ(v2.status, 200) << v2.text;
  EXPECT_EQ(v1.json, v2.json);
  std::vector<std::string> ids;
  for (const Json& l : v2.json["locations"]) {
    ids.push_back(l["locationId"]);
    EXPECT_EQ(l["name"], "projects/p/locations/" + l["locationId"].get<std::string>());
  }
  EXPECT_NE(std::find(ids.begin(), ids.end(), "us-central2-b"), ids.end());
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));

  Reply one = Get("/v2/projects/p/locations/us-central2-b");
  EXPECT_EQ(one.json, (Json{{"name", "projects/p/locations/us-central2-b"},
                            {"locationId", "us-central2-b"}}));
  EXPECT_EQ(Get("/v1/projects/p/locations/us-central2-b").json, one.json);
  EXPECT_EQ(Get("/v2/projects/p/locations/mars-north1-a").status, 404);

  Reply page = Get("/v2/projects/p/locations?pageSize=2");
  EXPECT_EQ(page.json["locations"].size(), 2u);
  Reply next = Get("/v2/projects/p/locations?pageSize=2&pageToken=" +
                   page.json["nextPageToken"].get<std::string>());
  EXPECT_EQ(next.json["locations"][0]["locationId"], ids[2]);
}

// Any string was taken as a project; ids with capitals, '_', ':' or spaces then broke
// the workers' DNS names and every boot failed with code 13.
TEST_F(ApiServerTest, ProjectIdsMustBeSpelledAsGcpSpellsThem) {
  for (const char* bad : {"My-Project", "a_b", "google.com:x", "a%20b", "ends-", "9lives-"}) {
    Reply r = Get(std::string("/v2/projects/") + bad + "/locations/us-central2-b/nodes");
    EXPECT_EQ(r.status, 403) << bad << ": " << r.text;
  }
  for (const char* good : {"p", "my-project-42", "123456789012"}) {
    EXPECT_EQ(Get(std::string("/v2/projects/") + good + "/locations/us-central2-b/nodes").status,
              200)
        << good;
  }
}

TEST_F(ApiServerTest, UnknownZoneIsRefusedLikeGoogleDoes) {
  Reply r = Get("/v2/projects/p/locations/us-nowhere1-z/nodes");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.json["error"]["status"], "PERMISSION_DENIED");
  EXPECT_EQ(r.json["error"]["message"],
            "Location us-nowhere1-z is not found or access is unauthorized.");
}

TEST_F(ApiServerTest, AcceleratorTypesComeFromTheCatalogPerZone) {
  Reply list = Get(std::string(kParent) + "/acceleratorTypes");
  ASSERT_EQ(list.status, 200);
  ASSERT_FALSE(list.json["acceleratorTypes"].empty());
  for (const Json& t : list.json["acceleratorTypes"]) {
    EXPECT_EQ(t["type"].get<std::string>().rfind("v4-", 0), 0u) << t;  // only v4 in us-central2-b
  }
  Reply v432 = Get(std::string(kParent) + "/acceleratorTypes/v4-32");
  EXPECT_EQ(v432.json, (Json{{"name", "projects/p/locations/us-central2-b/acceleratorTypes/v4-32"},
                             {"type", "v4-32"},
                             {"acceleratorConfigs", {{{"type", "V4"}, {"topology", "2x2x4"}}}}}));
  EXPECT_EQ(Get(std::string(kParent) + "/acceleratorTypes/v5p-8").status, 404);

  // Paging over a list that is not sorted by name keeps catalog order.
  std::vector<std::string> paged;
  std::string token;
  for (int i = 0; i < 50; ++i) {
    Reply r = Get(std::string(kParent) + "/acceleratorTypes?pageSize=3" +
                  (token.empty() ? "" : "&pageToken=" + token));
    for (const Json& t : r.json["acceleratorTypes"]) {
      paged.push_back(t["type"]);
    }
    token = r.json.value("nextPageToken", std::string());
    if (token.empty()) {
      break;
    }
  }
  EXPECT_EQ(paged.size(), list.json["acceleratorTypes"].size());
  EXPECT_EQ(paged.front(), "v4-8");
}

TEST_F(ApiServerTest, RuntimeVersions) {
  Reply list = Get("/v2/projects/p/locations/us-east5-a/runtimeVersions");
  ASSERT_EQ(list.status, 200);
  std::vector<std::string> versions;
  for (const Json& v : list.json["runtimeVersions"]) {
    versions.push_back(v["version"]);
  }
  EXPECT_NE(std::find(versions.begin(), versions.end(), "v2-alpha-tpuv6e"), versions.end());
  EXPECT_EQ(Get("/v2/projects/p/locations/us-east5-a/runtimeVersions/v2-alpha-tpuv6e").json["name"],
            "projects/p/locations/us-east5-a/runtimeVersions/v2-alpha-tpuv6e");
  EXPECT_EQ(Get("/v2/projects/p/locations/us-east5-a/runtimeVersions/tpu-vm-v4-base").status, 404);
}

TEST_F(ApiServerTest, OperationsCanBeListedCancelledAndDeleted) {
  std::string a = Post(std::string(kParent) + "/nodes?nodeId=a", NodeBody()).json["name"];
  std::string b = Post(std::string(kParent) + "/nodes?nodeId=b", NodeBody()).json["name"];
  Reply list = Get(std::string(kParent) + "/operations?");
  ASSERT_EQ(list.json["operations"].size(), 2u);
  Reply page = Get(std::string(kParent) + "/operations?pageSize=1");
  EXPECT_EQ(page.json["operations"].size(), 1u);
  EXPECT_TRUE(page.json.contains("nextPageToken"));

  Reply cancel = Post("/v2/" + a + ":cancel");
  EXPECT_EQ(cancel.status, 200);
  EXPECT_EQ(cancel.json, Json::object());
  EXPECT_TRUE(Get("/v2/" + a).json["metadata"]["cancelRequested"].get<bool>());
  // Cloud TPU operations run to the end even when a cancel was asked.
  EXPECT_EQ(WaitOperation(a)["response"]["state"], "READY");

  EXPECT_EQ(Delete("/v2/" + b).json, Json::object());
  EXPECT_EQ(Get("/v2/" + b).status, 404);
  EXPECT_EQ(Post("/v2/" + b + ":cancel").status, 404);
  EXPECT_EQ(Get(std::string(kParent) + "/operations/operation-1-x")
                .json["error"]["details"][0]["resourceName"],
            "projects/p/locations/us-central2-b/operations/operation-1-x");
}

TEST_F(ApiServerTest, UnknownRoutesAre404) {
  EXPECT_EQ(Get("/v3/projects/p/locations").status, 404);
  EXPECT_EQ(Get("/").status, 404);
  EXPECT_EQ(Get(std::string(kParent) + "/widgets").status, 404);
  EXPECT_EQ(Send("PUT", std::string(kParent) + "/nodes").status, 404);
  EXPECT_EQ(Post(std::string(kParent) + "/nodes/n1:explode").status, 404);
  EXPECT_EQ(Get("/v1/projects/p/locations/us-central2-b/nodes").status, 404);
  Reply r = Get("/v2/projects/p/zones/z");
  EXPECT_EQ(r.json["error"]["code"], 404);
}

TEST_F(ApiServerTest, GenerateServiceIdentity) {
  Reply r = Post("/v2/projects/p/locations/us-central2-b:generateServiceIdentity");
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_TRUE(
      std::regex_match(r.json["identity"]["email"].get<std::string>(),
                       std::regex("service-[0-9]{12}@cloud-tpu\\.iam\\.gserviceaccount\\.com")));
}

TEST_F(ApiServerTest, ProjectsCanBeRestricted) {
  EmulatorConfig config;
  config.projects = {"mine"};
  Reset(config);
  EXPECT_EQ(Get("/v2/projects/mine/locations/us-central2-b/nodes").status, 200);
  Reply r = Get("/v2/projects/yours/locations/us-central2-b/nodes");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.json["error"]["message"], "Permission denied on resource project yours.");
  EXPECT_EQ(r.json["error"]["details"][0]["reason"], "CONSUMER_INVALID");
}

// Issue 10, finding 1: as any local user, GET /emulator/v1/status gave every node,
// worker address and host key, and a patch of ssh-keys gave root on the workers. Now
// nothing but the token endpoint answers without the owner's secret or an issued token.
class Issue10 : public ApiFixture {};

TEST_F(Issue10, EveryRouteRefusesAStranger) {
  CreateNode("victim");
  const std::string patch_keys = NodePath("victim") + "?updateMask=metadata";
  const Json keys{{"metadata", {{"ssh-keys", "mallory:ssh-ed25519 AAAA mallory"}}}};
  for (const char* bearer : {"", "Bearer ", "Bearer made-up", "Bearer owner-secret-for-test",
                             "Bearer owner-secret-for-testsX", "Basic b3duZXI="}) {
    SCOPED_TRACE(bearer);
    std::map<std::string, std::string> h{{"authorization", bearer}};
    for (const auto& [method, path, body] :
         std::vector<std::tuple<std::string, std::string, std::string>>{
             {"GET", "/emulator/v1/status", ""},
             {"GET", "/emulator/v1/faults", ""},
             {"POST", "/emulator/v1/faults", R"({"kind":"storm","rate":1})"},
             {"DELETE", "/emulator/v1/faults", ""},
             {"GET", "/emulator/v1/nothing", ""},
             {"GET", std::string(kParent) + "/nodes", ""},
             {"PATCH", patch_keys, keys.dump()},
             {"DELETE", NodePath("victim"), ""},
             {"GET", "/v2/projects/p/locations", ""},
             {"GET", "/nowhere", ""}}) {
      Reply r = Send(method, path, body, h);
      EXPECT_EQ(r.status, 401) << method << " " << path << ": " << r.text;
      EXPECT_EQ(r.json["error"]["code"], 401) << r.text;
      EXPECT_EQ(r.json["error"]["status"], "UNAUTHENTICATED") << r.text;
      EXPECT_EQ(r.text.find("victim"), std::string::npos) << r.text;
    }
  }
  // Nothing the stranger sent took effect; the owner sees the node as it was.
  Pass(seconds(2));
  Reply node = Get(NodePath("victim"));
  ASSERT_EQ(node.status, 200) << node.text;
  EXPECT_FALSE(node.json.contains("metadata")) << node.text;
  EXPECT_EQ(Get("/emulator/v1/faults").json["faults"].size(), 0u);
  EXPECT_EQ(Get("/emulator/v1/status").status, 200);
  EXPECT_EQ(GetStatusAs("/emulator/v1/status", "bearer owner-secret-for-tests"), 200);
  EXPECT_EQ(GetStatusAs(std::string(kParent) + "/nodes?access_token=" + kOwnerToken, ""), 200);
}

TEST_F(Issue10, WithoutConfiguredCredentialsTheTokenEndpointIssuesNothing) {
  for (const char* form :
       {"grant_type=refresh_token&client_id=&client_secret=&refresh_token=",
        "grant_type=refresh_token&client_id=a&client_secret=b&refresh_token=c",
        "grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=e30.e30.",
        "grant_type=client_credentials"}) {
    Reply r = Send("POST", "/token", form, {{"authorization", ""}});
    EXPECT_GE(r.status, 400) << form << ": " << r.text;
    EXPECT_FALSE(r.json.contains("access_token")) << r.text;
  }
}

// The token endpoint's tokens came from a generator seeded with the config's seed (1
// unless set): anyone could compute the next one.
TEST_F(Issue10, IssuedTokensCannotBePredictedFromTheSeed) {
  EmulatorConfig config;
  config.auth.authorized_users.push_back({"client", "secret", "refresh"});
  std::set<std::string> tokens;
  for (int i = 0; i < 2; ++i) {
    Reset(config);
    Reply r = Send(
        "POST", "/token",
        "grant_type=refresh_token&client_id=client&client_secret=secret&refresh_token=refresh");
    ASSERT_EQ(r.status, 200) << r.text;
    tokens.insert(r.json["access_token"].get<std::string>());
  }
  EXPECT_EQ(tokens.size(), 2u) << "two servers with one seed issued the same token";
}

TEST_F(ApiServerTest, IssuedTokensCanBeRequired) {
  EmulatorConfig config;
  config.auth.require_issued_tokens = true;
  config.auth.authorized_users.push_back({"client", "secret", "refresh"});
  Reset(config);
  Reply owner = Get(std::string(kParent) + "/nodes");
  EXPECT_EQ(owner.status, 401) << "the owner's secret is not an issued token";
  EXPECT_EQ(owner.json["error"]["status"], "UNAUTHENTICATED");
  EXPECT_EQ(Get("/emulator/v1/status").status, 200) << "the owner's secret opens the admin routes";
  EXPECT_EQ(GetStatusAs(std::string(kParent) + "/nodes", "Bearer made-up"), 401);

  Reply token =
      Send("POST", "/token",
           "grant_type=refresh_token&client_id=client&client_secret=secret&refresh_token=refresh");
  ASSERT_EQ(token.status, 200) << token.text;
  std::string access = token.json["access_token"];
  EXPECT_EQ(token.json["token_type"], "Bearer");
  EXPECT_EQ(token.json["expires_in"], 3599);
  EXPECT_EQ(GetStatusAs(std::string(kParent) + "/nodes", "Bearer " + access), 200);
  EXPECT_EQ(GetStatusAs(std::string(kParent) + "/nodes?access_token=" + access, ""), 200);
  EXPECT_EQ(GetStatusAs("/emulator/v1/status", "Bearer " + access), 200);
  clock_.Advance(seconds(3600));
  EXPECT_EQ(GetStatusAs(std::string(kParent) + "/nodes", "Bearer " + access), 401);
}

// Issue 14: a credential revoked mid-run. `tpufleet emulator token rotate` has the
// daemon publish a new owner secret (to STATE/token); from then on the old one gets 401
// on every route, as a revoked token does, and the new one is accepted from before it
// is published, so a client that reads it at once is never refused.
TEST_F(ApiServerTest, RotatingTheOwnersTokenRefusesTheOldOne) {
  EmulatorConfig config;
  std::vector<std::string> published;
  std::vector<int> while_published;
  config.auth.publish_owner_token = [&](const std::string& secret) {
    published.push_back(secret);
    while_published.push_back(GetStatusAs(std::string(kParent) + "/nodes", "Bearer " + secret));
    while_published.push_back(Send("GET", std::string(kParent) + "/nodes").status);  // the old
    return Status::Ok();
  };
  Reset(config);
  CreateNode("kept");
  Reply r = Post("/emulator/v1/token:rotate");
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.json, (Json{{"rotated", true}}));
  ASSERT_EQ(published.size(), 1u);
  const std::string fresh = published[0];
  EXPECT_EQ(fresh.rfind("tpufleet-emulator-", 0), 0u) << "ReadEmulatorToken wants the prefix";
  EXPECT_EQ(r.text.find(fresh), std::string::npos) << "the answer never holds the secret";
  EXPECT_EQ(while_published, (std::vector<int>{200, 200}))
      << "the old and the new secret both work while the new one is written";

  for (const std::string& path : {std::string(kParent) + "/nodes", NodePath("kept"),
                                 std::string("/emulator/v1/status")}) {
    Reply old = Send("GET", path);  // the fixture's (old) owner token
    EXPECT_EQ(old.status, 401) << path << ": " << old.text;
    EXPECT_EQ(old.json["error"]["status"], "UNAUTHENTICATED") << old.text;
    EXPECT_EQ(GetStatusAs(path, "Bearer " + fresh), 200) << path;
  }
  // The old token cannot rotate it back; the new one rotates again.
  EXPECT_EQ(Post("/emulator/v1/token:rotate").status, 401);
  EXPECT_EQ(Send("POST", "/emulator/v1/token:rotate", "", {{"authorization", "Bearer " + fresh}})
                .status,
            200);
  ASSERT_EQ(published.size(), 2u);
  EXPECT_NE(published[1], fresh);
  EXPECT_EQ(GetStatusAs(std::string(kParent) + "/nodes", "Bearer " + fresh), 401);
  EXPECT_EQ(GetStatusAs(NodePath("kept"), "Bearer " + published[1]), 200) << "nothing else changed";
}

TEST_F(ApiServerTest, ATokenThatCannotBePublishedIsNotRotated) {
  EmulatorConfig config;
  config.auth.publish_owner_token = [](const std::string&) {
    return PermissionDeniedError("STATE/token: read-only file system");
  };
  Reset(config);
  Reply failed = Post("/emulator/v1/token:rotate");
  EXPECT_EQ(failed.status, 500) << failed.text;
  EXPECT_NE(failed.text.find("read-only file system"), std::string::npos) << failed.text;
  EXPECT_EQ(Get("/emulator/v1/status").status, 200) << "the old token stays";

  Reset(EmulatorConfig{});  // nowhere to publish: a server without a daemon
  Reply refused = Post("/emulator/v1/token:rotate");
  EXPECT_EQ(refused.status, 400) << refused.text;
  EXPECT_EQ(refused.json["error"]["status"], "FAILED_PRECONDITION") << refused.text;
  EXPECT_EQ(Get("/emulator/v1/status").status, 200);
}

TEST_F(ApiServerTest, TokenEndpointVerifiesServiceAccountAssertions) {
  Result<GeneratedServiceAccountKey> key = GenerateServiceAccountKey(
      "sa@p.iam.gserviceaccount.com", "p", "http://127.0.0.1:1/token", 1024);
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EmulatorConfig config;
  config.auth.service_account_keys.push_back(key->accepted);
  Reset(config);
  Json sa = Json::parse(key->key_json);
  long long now = std::chrono::duration_cast<seconds>(clock_.Now().time_since_epoch()).count();
  Json claims{{"iss", sa["client_email"]},
              {"scope", "https://www.googleapis.com/auth/cloud-platform"},
              {"aud", "https://oauth2.googleapis.com/token"},
              {"iat", now},
              {"exp", now + 3600}};
  Result<std::string> jwt = SignJwtRs256(claims.dump(), sa["private_key"].get<std::string>(),
                                         sa["private_key_id"].get<std::string>());
  ASSERT_TRUE(jwt.ok());
  for (const char* path : {"/token", "/oauth2/v4/token"}) {
    Reply r =
        Send("POST", path,
             "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + *jwt);
    EXPECT_EQ(r.status, 200) << r.text;
    EXPECT_EQ(r.json["access_token"].get<std::string>().rfind("ya29.", 0), 0u);
  }
  std::string tampered = *jwt;
  tampered[tampered.size() - 5] = tampered[tampered.size() - 5] == 'A' ? 'B' : 'A';
  Reply bad = Send("POST", "/token",
                   "grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=" + tampered);
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.json,
            (Json{{"error", "invalid_grant"}, {"error_description", "Invalid JWT Signature."}}));
  EXPECT_EQ(GetStatusAs("/token", ""), 404);
}

TEST_F(ApiServerTest, AdminStatusShowsNodesFaultsAndUsage) {
  EmulatorConfig config;
  config.quota.push_back({"us-central2", "v4", QuotaTier::kAny, 100});
  Reset(config);
  CreateNode("n1", NodeBody("v4-16"));
  Post("/emulator/v1/faults", Json{{"kind", "stockout"}, {"zone", "us-east5-a"}});
  Reply status = Get("/emulator/v1/status");
  ASSERT_EQ(status.status, 200) << status.text;
  const Json& s = status.json;
  ASSERT_EQ(s["nodes"].size(), 1u);
  EXPECT_EQ(s["nodes"][0]["name"], NodeName("n1"));
  EXPECT_EQ(s["nodes"][0]["state"], "READY");
  EXPECT_EQ(s["nodes"][0]["chips"], 8);
  ASSERT_EQ(s["nodes"][0]["workers"].size(), 2u);
  EXPECT_EQ(s["nodes"][0]["workers"][1]["address"], "198.18.0.2");
  EXPECT_EQ(s["nodes"][0]["workers"][1]["cutOff"], false);
  EXPECT_EQ(s["faults"].size(), 1u);
  EXPECT_EQ(s["faults"][0]["kind"], "stockout");
  EXPECT_EQ(s["usage"]["quota"][0]["chipsInUse"], 8);
  EXPECT_EQ(s["usage"]["quota"][0]["chipsLimit"], 100);
  EXPECT_EQ(s["usage"]["capacity"][0]["chipsInUse"], 8);
  EXPECT_EQ(s["operations"]["total"], 1);
  EXPECT_EQ(s["hostWorkPending"], 0);
  EXPECT_EQ(Json::parse(server_->StatusJson())["nodes"], s["nodes"]);
  EXPECT_EQ(Get("/emulator/v1/nothing").status, 404);
}

// Issue 11: the admin status is api::EmulatorStatus on both sides: what the daemon
// writes, `tpufleet emulator status` reads back whole (every field, in one type).
class Issue11 : public ApiFixture {};

TEST_F(Issue11, AdminStatusReadsBackAsTheApiType) {
  EmulatorConfig config;
  config.quota.push_back({"us-central2", "v4", QuotaTier::kSpot, 100});
  Reset(config);
  CreateNode("n1", NodeBody("v4-16"));
  Post("/emulator/v1/faults", Json{{"kind", "storm"}, {"rate", 0.5}, {"duration", "1m"}});
  Post("/emulator/v1/faults", Json{{"kind", "cutoff"}, {"node", NodeName("n1")}, {"worker", 1}});
  std::string text = server_->StatusJson();
  Result<api::EmulatorStatus> status = api::ParseEmulatorStatus(text);
  ASSERT_TRUE(status.ok()) << status.status().message();
  EXPECT_EQ(api::ToJson(*status) + "\n", text);
  ASSERT_EQ(status->nodes.size(), 1u);
  EXPECT_EQ(NodeState::Parse(status->nodes[0].state), NodeState::kReady);
  EXPECT_TRUE(status->nodes[0].workers.at(1).cut_off);
  ASSERT_EQ(status->faults.size(), 2u);
  EXPECT_EQ(status->faults[0].storm->rate, 0.5);
  EXPECT_EQ(status->quota.at(0).tier, "spot");
  EXPECT_EQ(Get("/emulator/v1/faults").text, api::ToJson(status->faults) + "\n");
}

TEST_F(ApiServerTest, DestroyAllHostsQueuesDestroyForEveryNode) {
  CreateNode("a");
  CreateNode("b");
  hosts_->ClearCalls();
  server_->DestroyAllHosts();
  EXPECT_EQ(server_->host_work_pending(), 2u);
  EXPECT_EQ(server_->RunPendingHostWork(), 2u);
  EXPECT_EQ(hosts_->CallsStartingWith("Destroy").size(), 2u);
}

TEST_F(ApiServerTest, WithoutWorkerHostsTheServerRunsApiOnly) {
  EmulatorConfig config;
  config.auth.owner_token = kOwnerToken;
  ApiServer api(config, clock_, nullptr, catalog_);
  HttpRequest req;
  req.headers["authorization"] = std::string("Bearer ") + kOwnerToken;
  req.method = "POST";
  req.path = std::string(kParent) + "/nodes";
  req.query.emplace("nodeId", "n1");
  req.body = NodeBody("v4-32").dump();
  ASSERT_EQ(api.Handle(req).status, 200);
  api.RunPendingHostWork();
  clock_.Advance(seconds(2));
  req.method = "GET";
  req.query.clear();
  req.body.clear();
  req.path = NodePath("n1");
  Json node = Json::parse(api.Handle(req).body);
  EXPECT_EQ(node["state"], "READY");
  EXPECT_EQ(node["networkEndpoints"].size(), 4u);
}

}  // namespace
}  // namespace tpufleet::emulator
