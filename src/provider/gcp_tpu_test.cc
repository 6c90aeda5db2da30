#include "provider/gcp_tpu.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>

#include "provider/testing/fake_token_source.h"
#include "provider/testing/scripted_http_client.h"
#include "util/encoding.h"
#include "util/strings.h"
#include "util/testing/fake_clock.h"
#include "util/testing/status_printer.h"

namespace tpufleet {
namespace {

using Json = nlohmann::json;

constexpr const char* kZone = "us-central2-b";
constexpr const char* kBase = "http://tpu.test/v2/projects/p/locations/us-central2-b";

Json Operation(bool done = false) {
  return Json{{"name", "projects/p/locations/us-central2-b/operations/operation-1"},
              {"done", done}};
}

Json NodeJson(const std::string& zone, const std::string& id) {
  return Json{{"name", "projects/p/locations/" + zone + "/nodes/" + id},
              {"acceleratorType", "v4-8"},
              {"state", "READY"}};
}

class GcpTpuTest : public ::testing::Test {
 protected:
  GcpTpuTest() { Reset({}); }

  void Reset(GcpTpuOptions options) {
    options.project = "p";
    options.endpoint = "http://tpu.test/";
    options.seed = 5;
    provider_ = std::make_unique<GcpTpuProvider>(options, tokens_, http_, clock_);
  }

  HttpRequest Only() {
    EXPECT_EQ(http_.request_count(), 1u);
    return http_.requests().at(0);
  }

  static CreateNodeRequest Request() {
    CreateNodeRequest r;
    r.zone = kZone;
    r.node_id = "trainer";
    r.type = "v4-32";
    r.runtime_version = "tpu-ubuntu2204-base";
    r.capacity = Capacity::kSpot;
    r.request_id = "6f1c2a7e-0000-4000-8000-000000000001";
    return r;
  }

  FakeClock clock_;
  FakeTokenSource tokens_;
  ScriptedHttpClient http_;
  std::unique_ptr<GcpTpuProvider> provider_;
};

TEST(ResolveTpuEndpoint, DefaultAndOverride) {
  std::map<std::string, std::string> env;
  EnvLookup lookup = [&](const std::string& n) -> std::optional<std::string> {
    auto it = env.find(n);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  EXPECT_EQ(ResolveTpuEndpoint(lookup).value(), "https://tpu.googleapis.com/");
  EXPECT_EQ(ResolveTpuEndpoint(nullptr).value(), "https://tpu.googleapis.com/");
  env["CLOUDSDK_API_ENDPOINT_OVERRIDES_TPU"] = "http://127.0.0.1:8080/";
  EXPECT_EQ(ResolveTpuEndpoint(lookup).value(), "http://127.0.0.1:8080/");
  env["CLOUDSDK_API_ENDPOINT_OVERRIDES_TPU"] = "https://staging-tpu.sandbox.googleapis.com/";
  EXPECT_TRUE(ResolveTpuEndpoint(lookup).ok());
  for (const char* bad :
       {"http://127.0.0.1:8080", "127.0.0.1:8080/", "ftp://x/", "http:///", "https://"}) {
    env["CLOUDSDK_API_ENDPOINT_OVERRIDES_TPU"] = bad;
    Status s = ResolveTpuEndpoint(lookup).status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("must be an absolute URI beginning with http:// or https:// and "
                               "ending with a trailing '/'"),
              std::string::npos);
    EXPECT_NE(s.message().find(std::string("[") + bad + "]"), std::string::npos);
  }
}

TEST_F(GcpTpuTest, CreateNodeIsNodesCreateWithNodeId) {
  http_.Push(ScriptedHttpClient::Json(200, Operation()));
  CloudOperation op = provider_->CreateNode(Request()).value();
  EXPECT_EQ(op.name, "projects/p/locations/us-central2-b/operations/operation-1");
  EXPECT_FALSE(op.done);
  HttpRequest req = Only();
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.url, std::string(kBase) + "/nodes?nodeId=trainer");
  Json body = Json::parse(req.body);
  EXPECT_EQ(body["acceleratorType"], "v4-32");
  EXPECT_EQ(body["runtimeVersion"], "tpu-ubuntu2204-base");
  EXPECT_EQ(body["schedulingConfig"], (Json{{"spot", true}}));
}

TEST_F(GcpTpuTest, CreateRetriedAfterALostAnswerIsAlreadyExists) {
  http_.Push(UnavailableError("connection reset"));  // the create went through, the answer did not
  http_.Push(ScriptedHttpClient::Error(
      409, "ALREADY_EXISTS",
      "Resource 'projects/p/locations/us-central2-b/nodes/trainer' already exists"));
  Status s = provider_->CreateNode(Request()).status();
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(s.message().find("already exists"), std::string::npos);
  EXPECT_EQ(http_.request_count(), 2u);
}

TEST_F(GcpTpuTest, QueuedCreateIsQueuedResourcesCreateWithTheRequestId) {
  CreateNodeRequest r = Request();
  r.queued = QueuedSpec{std::chrono::seconds(3600)};
  http_.Push(ScriptedHttpClient::Json(200, Operation()));
  ASSERT_TRUE(provider_->CreateNode(r).ok());
  HttpRequest req = Only();
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.url, std::string(kBase) +
                         "/queuedResources?queuedResourceId=trainer&requestId=" + r.request_id);
  Json body = Json::parse(req.body);
  EXPECT_EQ(body["spot"], Json::object());
  EXPECT_EQ(body["queueingPolicy"], (Json{{"validUntilDuration", "3600s"}}));
  EXPECT_EQ(body["tpu"]["nodeSpec"][0]["parent"], "projects/p/locations/us-central2-b");
  EXPECT_EQ(body["tpu"]["nodeSpec"][0]["nodeId"], "trainer");
  EXPECT_EQ(body["tpu"]["nodeSpec"][0]["node"]["acceleratorType"], "v4-32");
}

TEST_F(GcpTpuTest, QueuedCreateWithoutARequestIdMakesOne) {
  CreateNodeRequest r = Request();
  r.queued = QueuedSpec{};
  r.request_id.clear();
  http_.Push(ScriptedHttpClient::Json(200, Operation()));
  ASSERT_TRUE(provider_->CreateNode(r).ok());
  std::map<std::string, std::string> q =
      ParseQueryString(Only().url.substr(Only().url.find('?') + 1));
  EXPECT_EQ(q["requestId"].size(), 36u);
}

TEST_F(GcpTpuTest, Deletes) {
  http_.Push(ScriptedHttpClient::Json(200, Operation()));
  ASSERT_TRUE(provider_->DeleteNode(kZone, "trainer").ok());
  http_.Push(ScriptedHttpClient::Json(200, Operation()));
  ASSERT_TRUE(provider_->DeleteQueuedResource(kZone, "trainer", true).ok());
  http_.Push(ScriptedHttpClient::Json(200, Operation()));
  ASSERT_TRUE(provider_->DeleteQueuedResource(kZone, "trainer", false).ok());
  std::vector<HttpRequest> reqs = http_.requests();
  EXPECT_EQ(reqs[0].method, "DELETE");
  EXPECT_EQ(reqs[0].url, std::string(kBase) + "/nodes/trainer");
  EXPECT_EQ(reqs[1].method, "DELETE");
  EXPECT_EQ(
      reqs[1].url.rfind(std::string(kBase) + "/queuedResources/trainer?force=true&requestId=", 0),
      0u)
      << reqs[1].url;
  EXPECT_EQ(reqs[2].url.find("force"), std::string::npos);
  http_.Push(ScriptedHttpClient::Error(404, "NOT_FOUND", "Resource 'x' was not found"));
  EXPECT_EQ(provider_->DeleteNode(kZone, "gone").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(provider_->DeleteNode("", "x").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(GcpTpuTest, StopIsNodesStopWithAnEmptyBody) {
  http_.Push(ScriptedHttpClient::Json(200, Operation()));
  CloudOperation op = provider_->StopNode(kZone, "dev").value();
  EXPECT_FALSE(op.done);
  HttpRequest req = Only();
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.url, std::string(kBase) + "/nodes/dev:stop");
  EXPECT_EQ(Json::parse(req.body), Json::object());
  EXPECT_EQ(provider_->StopNode(kZone, "").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(GcpTpuTest, SetSshKeysPatchesTheWholeMetadataWithOnlySshKeysReplaced) {
  Json node = NodeJson(kZone, "trainer");
  node["metadata"] = {{"startup-script", "echo hi"}, {"ssh-keys", "old:key"}};
  http_.Push(ScriptedHttpClient::Json(200, node));
  http_.Push(ScriptedHttpClient::Json(200, Operation()));
  ASSERT_TRUE(provider_->SetSshKeys(kZone, "trainer", "alice:ssh-ed25519 AAAA alice").ok());
  std::vector<HttpRequest> reqs = http_.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].method, "GET");
  EXPECT_EQ(reqs[0].url, std::string(kBase) + "/nodes/trainer");
  EXPECT_EQ(reqs[1].method, "PATCH");
  EXPECT_EQ(reqs[1].url, std::string(kBase) + "/nodes/trainer?updateMask=metadata");
  EXPECT_EQ(
      Json::parse(reqs[1].body),
      (Json{{"metadata",
             {{"startup-script", "echo hi"}, {"ssh-keys", "alice:ssh-ed25519 AAAA alice"}}}}));
}

TEST_F(GcpTpuTest, GetOperationReadsDoneAndClassifiesItsError) {
  Json op = Operation(true);
  op["error"] = {{"code", 8},
                 {"message",
                  "There is no more capacity in the zone \"us-central2-b\"; you can try "
                  "in another zone"}};
  http_.Push(ScriptedHttpClient::Json(200, op));
  CloudOperation got =
      provider_->GetOperation("projects/p/locations/us-central2-b/operations/operation-1").value();
  EXPECT_EQ(Only().url, std::string(kBase) + "/operations/operation-1");
  EXPECT_TRUE(got.done);
  EXPECT_EQ(got.error.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(got.error.message(),
            "There is no more capacity in the zone \"us-central2-b\"; you can try in another zone");
  EXPECT_EQ(provider_->GetOperation("../../x").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(GcpTpuTest, GetNodeAndQueuedResource) {
  http_.Push(ScriptedHttpClient::Json(200, NodeJson(kZone, "trainer")));
  EXPECT_EQ(provider_->GetNode(kZone, "trainer")->state, NodeState::kReady);
  http_.Push(ScriptedHttpClient::Json(
      200, {{"name", "projects/p/locations/us-central2-b/queuedResources/trainer"},
            {"state", {{"state", "ACTIVE"}}}}));
  EXPECT_EQ(provider_->GetQueuedResource(kZone, "trainer")->state, NodeState::kActive);
  std::vector<HttpRequest> reqs = http_.requests();
  EXPECT_EQ(reqs[0].url, std::string(kBase) + "/nodes/trainer");
  EXPECT_EQ(reqs[1].url, std::string(kBase) + "/queuedResources/trainer");
  http_.Push(ScriptedHttpClient::Error(404, "NOT_FOUND", "Resource 'x' was not found"));
  EXPECT_EQ(provider_->GetNode(kZone, "x").status(), NotFoundError("Resource 'x' was not found"));
}

TEST_F(GcpTpuTest, ListNodesFollowsPageTokensUntilEmpty) {
  GcpTpuOptions o;
  o.page_size = 2;
  Reset(o);
  http_.Push(ScriptedHttpClient::Json(
      200, {{"nodes", {NodeJson(kZone, "a"), NodeJson(kZone, "b")}}, {"nextPageToken", "t1"}}));
  http_.Push(
      ScriptedHttpClient::Json(200, {{"nodes", {NodeJson(kZone, "c")}}, {"nextPageToken", ""}}));
  std::vector<CloudNode> nodes = provider_->ListNodes({kZone}).value();
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[2].id, "c");
  std::vector<HttpRequest> reqs = http_.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].url, std::string(kBase) + "/nodes?pageSize=2");
  EXPECT_EQ(reqs[1].url, std::string(kBase) + "/nodes?pageSize=2&pageToken=t1");
}

TEST_F(GcpTpuTest, ListingAZoneTheApiCannotReachIsAnError) {
  http_.Push(ScriptedHttpClient::Json(200, {{"unreachable", {"us-central2-b"}}}));
  EXPECT_EQ(provider_->ListNodes({kZone}).status().code(), StatusCode::kUnavailable);
  http_.Push(ScriptedHttpClient::Json(200, {{"nextPageToken", "same"}}));
  http_.Push(ScriptedHttpClient::Json(200, {{"nextPageToken", "same"}}));
  EXPECT_EQ(provider_->ListNodes({kZone}).status().code(), StatusCode::kInternal);
}

// api_fuzzer: a list answered with HTTP 200 and a body that is JSON but not an object
// ("0", "[]"), or with a nextPageToken that is not a string, threw out of
// json::value() and ended the process instead of failing the list. A `nodes` that is
// not an array read as no nodes at all.
TEST(Issue10, ListPagesThatAreNotObjectsFailTheList) {
  FakeTokenSource tokens;
  ScriptedHttpClient http;
  FakeClock clock;
  GcpTpuOptions options;
  options.project = "p";
  options.endpoint = "http://tpu.test/";
  GcpTpuProvider provider(options, tokens, http, clock);
  for (const char* body : {"0", "[]", "\"nodes\"", "null", R"({"nodes": [], "nextPageToken": 5})",
                           R"({"nodes": [], "nextPageToken": {"t": "x"}})", R"({"nodes": 5})"}) {
    http.Push(HttpResponse{200, {}, body});
    Result<std::vector<CloudNode>> nodes = provider.ListNodes({kZone});
    ASSERT_FALSE(nodes.ok()) << body;
    EXPECT_EQ(nodes.status().code(), StatusCode::kInternal) << body;
    EXPECT_NE(nodes.status().message().find("us-central2-b"), std::string::npos)
        << nodes.status().ToString();
  }
}

TEST_F(GcpTpuTest, ZonesAreListedConcurrentlyAndMergedInZoneOrder) {
  std::vector<std::string> zones = {"z-a", "z-b", "z-c", "z-d"};
  std::atomic<int> in_flight{0};
  std::atomic<int> most{0};
  // The handler runs under the fake's lock; measure overlap in a wrapper instead.
  class OverlapClient final : public HttpClient {
   public:
    OverlapClient(std::atomic<int>& in_flight, std::atomic<int>& most)
        : in_flight_(in_flight), most_(most) {}
    Result<HttpResponse> Send(const HttpRequest& req) override {
      int now = ++in_flight_;
      for (int m = most_; now > m && !most_.compare_exchange_weak(m, now);) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      --in_flight_;
      std::string zone = Split(req.url, '/')[7];
      return ScriptedHttpClient::Json(200, {{"nodes", {NodeJson(zone, "n-" + zone)}}});
    }
    std::atomic<int>& in_flight_;
    std::atomic<int>& most_;
  };
  OverlapClient http(in_flight, most);
  GcpTpuOptions o;
  o.project = "p";
  o.endpoint = "http://tpu.test/";
  o.max_parallel_zones = 3;
  GcpTpuProvider provider(o, tokens_, http, clock_);
  std::vector<CloudNode> nodes = provider.ListNodes(zones).value();
  ASSERT_EQ(nodes.size(), 4u);
  for (size_t i = 0; i < zones.size(); ++i) {
    EXPECT_EQ(nodes[i].zone, zones[i]);
  }
  EXPECT_GE(most.load(), 2);
  EXPECT_LE(most.load(), 3);
}

TEST_F(GcpTpuTest, AZoneThatFailsFailsTheListAndIsNamed) {
  http_.Handle([](const HttpRequest& req) -> Result<HttpResponse> {
    if (req.url.find("/locations/bad-zone/") != std::string::npos) {
      return ScriptedHttpClient::Error(403, "PERMISSION_DENIED",
                                       "Location bad-zone is not found or access is unauthorized.");
    }
    return ScriptedHttpClient::Json(200, Json::object());
  });
  Status s = provider_->ListQueuedResources({kZone, "bad-zone"}).status();
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("bad-zone"), std::string::npos);
  EXPECT_NE(s.message().find("is not found or access is unauthorized."), std::string::npos);
}

TEST_F(GcpTpuTest, ListQueuedResources) {
  http_.Push(ScriptedHttpClient::Json(
      200, {{"queuedResources",
             {{{"name", "projects/p/locations/us-central2-b/queuedResources/q1"},
               {"state", {{"state", "WAITING_FOR_RESOURCES"}}}}}}}));
  std::vector<CloudQueuedResource> qrs = provider_->ListQueuedResources({kZone}).value();
  ASSERT_EQ(qrs.size(), 1u);
  EXPECT_EQ(qrs[0].id, "q1");
  EXPECT_EQ(Only().url, std::string(kBase) + "/queuedResources");
}

TEST_F(GcpTpuTest, WorkerIdentitiesFromGuestAttributesOfAllWorkers) {
  http_.Push(ScriptedHttpClient::Json(
      200, {{"guestAttributes",
             {{{"queryPath", "/"},
               {"queryValue",
                {{"items",
                  {{{"key", "ssh-ed25519"}, {"value", "AAAAC3Nz"}},
                   {{"key", "hostname"}, {"value", "t1v-n-1-w-0"}}}}}}}}}}));
  std::vector<WorkerIdentity> ids = provider_->GetWorkerIdentities(kZone, "trainer").value();
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(ids[0].host_key, "ssh-ed25519 AAAAC3Nz");
  EXPECT_EQ(ids[0].hostname, "t1v-n-1-w-0");
  HttpRequest req = Only();
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.url, std::string(kBase) + "/nodes/trainer:getGuestAttributes");
  EXPECT_EQ(Json::parse(req.body), (Json{{"workerIds", {""}}}));
}

TEST_F(GcpTpuTest, ErrorsOfEveryKindReachTheCaller) {
  for (const AnswerAndCode& c : std::vector<AnswerAndCode>{
           {ScriptedHttpClient::Error(409, "ALREADY_EXISTS", "exists"), StatusCode::kAlreadyExists},
           {ScriptedHttpClient::QuotaExceeded("Quota limit 'TPUV4' has been exceeded."),
            StatusCode::kFailedPrecondition},
           {ScriptedHttpClient::Error(400, "INVALID_ARGUMENT",
                                      "CloudTpu received an invalid "
                                      "AcceleratorType"),
            StatusCode::kInvalidArgument},
           {ScriptedHttpClient::Error(401, "UNAUTHENTICATED", "invalid credentials"),
            StatusCode::kPermissionDenied},
       }) {
    http_.Push(c.answer);
    Status s = provider_->CreateNode(Request()).status();
    EXPECT_EQ(s.code(), c.code) << c.answer.body;
    EXPECT_NE(s.message().find(Json::parse(c.answer.body)["error"]["message"].get<std::string>()),
              std::string::npos)
        << s.message();
  }
}

// ---- Issue 10: a list that never ends ----

class Issue10Paging : public GcpTpuTest {};

TEST_F(Issue10Paging, AServerThatAlwaysSendsANewPageTokenIsStopped) {
  // Each page names a new token. Without a bound the list would go on for ever; the
  // script gives up (HTTP 400) well past the bound, so such a run fails, not hangs.
  std::atomic<int> pages{0};
  http_.Handle([&](const HttpRequest&) -> Result<HttpResponse> {
    int n = ++pages;
    if (n > 3 * kMaxListPages) {
      return ScriptedHttpClient::Error(400, "INVALID_ARGUMENT", "the test gave up");
    }
    return ScriptedHttpClient::Json(200, {{"nodes", {NodeJson(kZone, "n" + std::to_string(n))}},
                                          {"nextPageToken", "t" + std::to_string(n)}});
  });
  Result<std::vector<CloudNode>> r = provider_->ListNodes({kZone});
  EXPECT_EQ(r.status().code(), StatusCode::kInternal) << r.status().ToString();
  EXPECT_NE(r.status().message().find("kept sending a nextPageToken"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(pages.load(), kMaxListPages);
}

TEST_F(Issue10Paging, TooManyItemsInAListAreRefused) {
  Json page = {{"nodes", Json::array()}};
  for (size_t i = 0; i <= kMaxListItems; ++i) {
    page["nodes"].push_back(Json::object());
  }
  http_.Push(ScriptedHttpClient::Json(200, page));
  Result<std::vector<CloudNode>> r = provider_->ListNodes({kZone});
  EXPECT_EQ(r.status().code(), StatusCode::kInternal) << r.status().ToString();
  EXPECT_NE(r.status().message().find("more than 100000 nodes"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace tpufleet
