// Query parameters as Google's front end takes them, over real HTTP on loopback (the
// emulator's HttpServer, httplib's client): booleans as gcloud sends them (force=True),
// repeated parameters, and the system parameters alt, fields (partial responses),
// prettyPrint and the ones the emulator accepts and ignores.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "emulator/http_server.h"
#include "emulator/testing/api_fixture.h"

namespace tpufleet::emulator {
namespace {

class QueryOverHttpTest : public ApiFixture {
 protected:
  void SetUp() override {
    http_ = std::make_unique<HttpServer>(server_.get(), HttpServerOptions{});
    Result<int> port = http_->Start();
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    port_ = *port;
    client_ = std::make_unique<httplib::Client>("127.0.0.1", *port);
    client_->set_bearer_token_auth(kOwnerToken);
  }
  void TearDown() override { http_->Stop(); }

  // `method` of `path_and_query` as sent (already percent-encoded where needed).
  Reply Http(const std::string& method, const std::string& path_and_query,
             const std::string& body = "", const httplib::Headers& headers = {}) {
    httplib::Result r = method == "GET"      ? client_->Get(path_and_query, headers)
                        : method == "DELETE" ? client_->Delete(path_and_query, headers)
                        : method == "PATCH"
                            ? client_->Patch(path_and_query, headers, body, "application/json")
                            : client_->Post(path_and_query, headers, body, "application/json");
    Reply out;
    if (!r) {
      ADD_FAILURE() << method << " " << path_and_query << ": " << httplib::to_string(r.error());
      return out;
    }
    out.status = r->status;
    out.text = r->body;
    out.json = Json::parse(r->body, nullptr, false);
    return out;
  }

  // A queued resource `id` whose node `id`-n exists (ACTIVE).
  void ActiveQueuedResource(const std::string& id) {
    Json qr = {{"tpu",
                {{"nodeSpec", Json::array({{{"parent", std::string("projects/p/locations/") + kZone},
                                            {"nodeId", id + "-n"},
                                            {"node", NodeBody()}}})}}}};
    ASSERT_EQ(Post(std::string(kParent) + "/queuedResources?queuedResourceId=" + id, qr).status,
              200);
    for (int i = 0; i < 600 && Get(std::string(kParent) + "/queuedResources/" + id)
                                       .json["state"]
                                       .value("state", "") != "ACTIVE";
         ++i) {
      Pass(milliseconds(100));
    }
    ASSERT_EQ(Get(std::string(kParent) + "/queuedResources/" + id).json["state"]["state"],
              "ACTIVE");
  }

  // What the server answers to `request`, sent as these bytes on a fresh connection that
  // stays open: up to the end of its head, or what came within 10 s.
  std::string RawExchange(const std::string& request) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    std::string answer;
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      pollfd p{fd, POLLIN, 0};
      char buf[4096];
      while (answer.find("\r\n\r\n") == std::string::npos && poll(&p, 1, 10000) > 0) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) {
          break;
        }
        answer.append(buf, static_cast<size_t>(n));
      }
    }
    close(fd);
    return answer;
  }

  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<httplib::Client> client_;
  int port_ = 0;
};

TEST_F(QueryOverHttpTest, ForceIsABooleanAsGcloudSendsIt) {
  ActiveQueuedResource("q1");
  std::string path = std::string(kParent) + "/queuedResources/q1";
  Reply bad = Http("DELETE", path + "?force=yes");
  EXPECT_EQ(bad.status, 400) << bad.text;
  EXPECT_EQ(bad.json["error"]["message"], "Invalid value at 'force' (TYPE_BOOL), \"yes\"");
  Reply no = Http("DELETE", path + "?force=False");
  EXPECT_EQ(no.status, 400) << no.text;
  EXPECT_EQ(no.json["error"]["status"], "FAILED_PRECONDITION");
  // gcloud's `queued-resources delete --force` sends Python's True.
  Reply yes = Http("DELETE", path + "?alt=json&force=True");
  EXPECT_EQ(yes.status, 200) << yes.text;
  EXPECT_EQ(yes.json["metadata"]["verb"], "delete");
  int k = 0;
  for (const char* value : {"true", "TRUE", "1"}) {
    std::string id = "qf" + std::to_string(++k);
    ActiveQueuedResource(id);
    Reply r = Http("DELETE", std::string(kParent) + "/queuedResources/" + id + "?force=" + value);
    EXPECT_EQ(r.status, 200) << value << ": " << r.text;
  }
}

TEST_F(QueryOverHttpTest, RepeatedParameters) {
  CreateNode("n1");
  CreateNode("n2");
  // A repeated field (a FieldMask's paths) takes every value.
  Reply patch = Http("PATCH", NodePath("n1") + "?updateMask=labels&updateMask=description",
                     R"({"labels": {"team": "a"}, "description": "two params"})");
  ASSERT_EQ(patch.status, 200) << patch.text;
  WaitOperation(patch.json["name"]);
  Json node = Http("GET", NodePath("n1")).json;
  EXPECT_EQ(node["labels"]["team"], "a");
  EXPECT_EQ(node["description"], "two params");
  // A singular one sent twice counts with its last value.
  Reply page = Http("GET", std::string(kParent) + "/nodes?pageSize=5&pageSize=1");
  ASSERT_EQ(page.status, 200) << page.text;
  EXPECT_EQ(page.json["nodes"].size(), 1u);
  EXPECT_TRUE(page.json.contains("nextPageToken"));
}

TEST_F(QueryOverHttpTest, FieldsSelectAPartialResponse) {
  CreateNode("n1");
  CreateNode("n2", Json{{"acceleratorType", "v4-8"},
                        {"runtimeVersion", "tpu-ubuntu2204-base"},
                        {"labels", {{"team", "b"}}}});
  std::string list = std::string(kParent) + "/nodes";
  Reply r = Http("GET", list + "?pageSize=1&fields=nextPageToken,nodes(name,state)");
  ASSERT_EQ(r.status, 200) << r.text;
  ASSERT_EQ(r.json.size(), 2u) << r.text;
  EXPECT_TRUE(r.json.contains("nextPageToken"));
  EXPECT_EQ(r.json["nodes"][0], (Json{{"name", NodeName("n1")}, {"state", "READY"}}));

  r = Http("GET", list + "?fields=nodes/labels/team");
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.json, (Json{{"nodes", Json::array({Json::object(), {{"labels", {{"team", "b"}}}}})}}));

  // $fields, the FieldMask header, nested paths and "*".
  r = Http("GET", NodePath("n1") + "?%24fields=name,networkConfig/network");
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.json, (Json{{"name", NodeName("n1")},
                          {"networkConfig", {{"network", "projects/p/global/networks/default"}}}}));
  r = Http("GET", NodePath("n1"), "", {{"X-Goog-FieldMask", "acceleratorType"}});
  EXPECT_EQ(r.json, (Json{{"acceleratorType", "v4-8"}})) << r.text;
  r = Http("GET", list + "?fields=nodes(acceleratorConfig/*)");
  EXPECT_EQ(r.json["nodes"][0], (Json{{"acceleratorConfig", {{"type", "V4"}, {"topology", "2x2x1"}}}}))
      << r.text;

  // A selection that does not parse is refused; an error's envelope is never filtered.
  r = Http("GET", list + "?fields=nodes(name");
  EXPECT_EQ(r.status, 400) << r.text;
  EXPECT_EQ(r.json["error"]["message"], "Invalid field selection nodes(name");
  r = Http("GET", NodePath("nope") + "?fields=name");
  EXPECT_EQ(r.status, 404) << r.text;
  EXPECT_EQ(r.json["error"]["status"], "NOT_FOUND");
}

TEST_F(QueryOverHttpTest, AltIsJson) {
  std::string list = std::string(kParent) + "/nodes";
  // gax sends "$alt=json;enum-encoding=int" as it is: the value has an '=' in it.
  for (const char* alt : {"alt=json", "%24alt=json", "%24alt=json%3Benum-encoding%3Dint",
                          "$alt=json;enum-encoding=int", "alt="}) {
    EXPECT_EQ(Http("GET", list + "?" + alt).status, 200) << alt;
  }
  for (const char* alt : {"alt=proto", "alt=media", "alt=sse"}) {
    Reply r = Http("GET", list + "?" + alt);
    EXPECT_EQ(r.status, 400) << alt;
    EXPECT_EQ(r.json["error"]["status"], "INVALID_ARGUMENT") << r.text;
  }
  // A refused alt stops a create before it runs.
  EXPECT_EQ(Http("POST", list + "?nodeId=n1&alt=proto", NodeBody().dump()).status, 400);
  EXPECT_EQ(Http("GET", NodePath("n1")).status, 404);
}

TEST_F(QueryOverHttpTest, PrettyPrint) {
  CreateNode("n1");
  Reply pretty = Http("GET", NodePath("n1"));
  EXPECT_NE(pretty.text.find("\n  \"name\""), std::string::npos) << pretty.text;
  for (const char* q : {"prettyPrint=false", "%24prettyPrint=false", "prettyPrint=False"}) {
    Reply compact = Http("GET", NodePath("n1") + "?" + q);
    EXPECT_EQ(compact.status, 200) << q;
    EXPECT_EQ(compact.text.find('\n'), compact.text.size() - 1) << q << ": " << compact.text;
    EXPECT_EQ(compact.json, pretty.json) << q;
  }
  Reply error = Http("GET", NodePath("nope") + "?prettyPrint=false");
  EXPECT_EQ(error.status, 404);
  EXPECT_EQ(error.text.find('\n'), error.text.size() - 1) << error.text;
  EXPECT_EQ(Http("GET", NodePath("n1") + "?prettyPrint=maybe").status, 400);
}

// Google's front end wants a length on every request that may carry a body: a POST with
// neither Content-Length nor chunked encoding is answered 411 at once, and does nothing,
// however long the client keeps its side open (the emulator used to wait for a body
// until its read timeout, then answer 400 "malformed HTTP").
TEST_F(QueryOverHttpTest, APostWithoutALengthIs411) {
  CreateNode("n1");
  std::string head = ":stop HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) +
                     "\r\nAuthorization: Bearer " + std::string(kOwnerToken) + "\r\n";
  std::string answer = RawExchange("POST " + NodePath("n1") + head + "\r\n");
  EXPECT_EQ(answer.substr(0, 13), "HTTP/1.1 411 ") << answer;
  EXPECT_EQ(Http("GET", NodePath("n1")).json.value("state", ""), "READY");
  // With a length of 0 it is an ordinary call.
  answer = RawExchange("POST " + NodePath("n1") + head + "Content-Length: 0\r\n\r\n");
  EXPECT_EQ(answer.substr(0, 13), "HTTP/1.1 200 ") << answer;
}

TEST_F(QueryOverHttpTest, OtherSystemParametersAreAcceptedAndIgnored) {
  CreateNode("n1");
  Reply plain = Http("GET", NodePath("n1"));
  Reply with = Http("GET", NodePath("n1") +
                               "?key=AIza-not-checked&quotaUser=alice&%24.xgafv=2&%24unique=7&"
                               "uploadType=media&upload_protocol=raw&%24outputDefaults=true");
  EXPECT_EQ(with.status, 200) << with.text;
  EXPECT_EQ(with.json, plain.json);
  // No JSONP: the emulator serves programs, not web pages.
  Reply jsonp = Http("GET", NodePath("n1") + "?callback=f");
  EXPECT_EQ(jsonp.status, 400) << jsonp.text;
}

}  // namespace
}  // namespace tpufleet::emulator
