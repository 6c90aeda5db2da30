// What each caller of serve's API sees (control/access.h, visible.h) and what the audit
// log keeps of them: ServeApi driven directly over a real SQLite store in memory, with
// people's tokens issued as `tpufleet invite` issues them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <ostream>

#include "api/agent.h"
#include "control/person_tokens.h"
#include "server/http_api.h"
#include "store/sqlite_store.h"
#include "util/testing/fake_clock.h"

namespace tpufleet::server {
namespace {

using nlohmann::json;

constexpr const char* kRolesToken = "tpufleet-serve-test-token";

class ServeRolesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = SqliteStore::Open(":memory:").value();
    for (const char* name : {"a", "b"}) {
      NodeRecord n;
      n.fleet = "lab";
      n.name = name;
      n.provider = "gcp-tpu";
      n.state = NodeState::Parse("READY");
      n.created_at = clock_.Now();
      ASSERT_TRUE(store_->PutNode(n).ok());
      ASSERT_TRUE(store_->AddEvent({0, clock_.Now(), "lab", name, "ready", ""}).ok());
    }
    ASSERT_TRUE(store_->AddEvent({0, clock_.Now(), "lab", "", "budget-reached", ""}).ok());
    ASSERT_TRUE(store_->AddEvent({0, clock_.Now(), "elsewhere", "", "budget-reached", ""}).ok());
    User("milo", "member", {"a"});
    User("ada", "member", {"a", "b"});
    User("boss", "admin", {});
    Job("j-milo", "milo");
    Job("j-ada", "ada");
    ServeRecord r{4242, "lab-1", {"lab"}, clock_.Now(), clock_.Now()};
    ASSERT_TRUE(store_->PutServe(r).ok());
    ServeSnapshot snap;
    snap.warnings = {"b: waiting for its agent"};
    view_.Publish(snap);
    ServeApiContext context{kRolesToken, &view_, store_.get(), &clock_};
    context.run_command = [](const api::CommandRequest&, const Caller&, std::ostream&,
                             std::ostream& err, const std::atomic<bool>&) {
      err << "tpufleet: error: no node named b\n";
      return 1;
    };
    api_ = std::make_unique<ServeApi>(std::move(context));
  }

  void User(const std::string& name, const std::string& role, std::vector<std::string> nodes) {
    UserRecord u;
    u.fleet = "lab";
    u.name = name;
    u.role = role;
    u.nodes = std::move(nodes);
    ASSERT_TRUE(store_->PutUser(u).ok());
    tokens_[name] = IssuePersonToken(*store_, name, "test", clock_.Now(), false).value();
  }
  void Job(const std::string& id, const std::string& user) {
    api::JobSpec spec;
    spec.id = id;
    spec.user = user;
    spec.command = "sleep 600";
    JobRecord j;
    j.fleet = "lab";
    j.node = "a";
    j.id = id;
    j.name = id;
    j.spec_json = api::ToJson(spec);
    j.restart = "on-preemption";
    j.state = "active";
    ASSERT_TRUE(store_->PutJob(j).ok());
  }

  ApiResponse Call(const std::string& who, const std::string& method, const std::string& path,
                   std::map<std::string, std::string> query = {}, std::string body = "") {
    ApiRequest r{method, path, std::move(query), {}, std::move(body)};
    std::string token = who == "operator" ? kRolesToken : tokens_.count(who) ? tokens_[who] : who;
    r.headers["authorization"] = "Bearer " + token;
    ApiResponse out = api_->Handle(r);
    while (out.stream) {  // a command's answer, read to its end as a client would
      std::optional<std::string> piece = out.stream->Next();
      if (!piece) {
        out.stream->End();
        out.stream = nullptr;
      } else {
        out.body += *piece;
      }
    }
    return out;
  }
  json Get(const std::string& who, const std::string& path,
           std::map<std::string, std::string> query = {}) {
    ApiResponse r = Call(who, "GET", path, std::move(query));
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body);
  }
  static std::vector<std::string> Field(const json& list, const char* name) {
    std::vector<std::string> out;
    for (const json& e : list) {
      out.push_back(e.value(name, std::string()));
    }
    return out;
  }

  FakeClock clock_;
  std::unique_ptr<SqliteStore> store_;
  PublishedServeView view_;
  std::unique_ptr<ServeApi> api_;
  std::map<std::string, std::string> tokens_;
};

TEST_F(ServeRolesTest, AMembersStatusListsOnlyTheirNodesAndNoPassWarnings) {
  json milo = Get("milo", "/v1/status");
  EXPECT_EQ(Field(milo["nodes"], "node"), std::vector<std::string>{"a"});
  EXPECT_FALSE(milo.contains("warnings") && !milo["warnings"].empty()) << milo.dump();
  EXPECT_EQ(milo["serve"]["fleets"], json::array({"lab"}));
  json ada = Get("ada", "/v1/status");
  EXPECT_EQ(Field(ada["nodes"], "node"), (std::vector<std::string>{"a", "b"}));
  json boss = Get("boss", "/v1/status");
  EXPECT_EQ(boss["warnings"], json::array({"b: waiting for its agent"}));
}

TEST_F(ServeRolesTest, AMembersEventsAreTheirNodesAndTheirFleets) {
  json milo = Get("milo", "/v1/events");
  EXPECT_EQ(Field(milo, "node"), (std::vector<std::string>{"a", ""}));
  EXPECT_EQ(Field(milo, "fleet"), (std::vector<std::string>{"lab", "lab"}));
  EXPECT_TRUE(Get("milo", "/v1/events", {{"node", "b"}}).empty());
  EXPECT_EQ(Get("operator", "/v1/events").size(), 4u);
}

TEST_F(ServeRolesTest, AMembersJobsAreTheirOwn) {
  EXPECT_EQ(Field(Get("milo", "/v1/jobs")["jobs"], "id"), std::vector<std::string>{"j-milo"});
  EXPECT_EQ(Field(Get("ada", "/v1/jobs")["jobs"], "id"), std::vector<std::string>{"j-ada"});
  EXPECT_EQ(Get("boss", "/v1/jobs")["jobs"].size(), 2u);
}

TEST_F(ServeRolesTest, MetricsAreForTheOperatorAndAdminsOfEveryFleet) {
  ApiResponse r = Call("milo", "GET", "/metrics");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(json::parse(r.body)["error"]["code"], "permission_denied") << r.body;
  EXPECT_EQ(Call("boss", "GET", "/metrics").status, 200);
  EXPECT_EQ(Call("operator", "GET", "/metrics").status, 200);
}

TEST_F(ServeRolesTest, TheAuditLogHasEachPersonsRequestAndHowItEnded) {
  Call("milo", "GET", "/v1/jobs");
  Call("milo", "GET", "/metrics");
  Call("operator", "GET", "/metrics");  // a scrape: not logged
  Call("tpufleet-person-nobodys", "GET", "/v1/status");
  Call("milo", "POST", "/v1/command", {},
       R"({"argv": ["status", "b", "--env", "WANDB_KEY=hush", "--", "echo", "hush"]})");
  std::vector<AuditRecord> lines = store_->Audit(std::nullopt, 100).value();
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].person, "milo");
  EXPECT_EQ(lines[0].action, "GET /v1/jobs");
  EXPECT_EQ(lines[0].outcome, "ok");
  EXPECT_EQ(lines[1].action, "GET /metrics");
  EXPECT_EQ(lines[1].outcome, "refused: 403 permission_denied");
  EXPECT_EQ(lines[2].person, "?");
  EXPECT_EQ(lines[2].outcome, "unauthenticated");
  EXPECT_EQ(lines[3].action, "status b --env WANDB_KEY=… -- …");
  EXPECT_EQ(lines[3].outcome, "exit 1");
  for (const AuditRecord& a : lines) {
    EXPECT_EQ(a.action.find("hush"), std::string::npos) << a.action;
    EXPECT_EQ(a.action.find("nobodys"), std::string::npos) << a.action;
  }
}

}  // namespace
}  // namespace tpufleet::server
