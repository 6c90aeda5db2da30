// What a member sees of status, jobs, events and audit when a team server runs them for
// them (RunServedCommand with their Access, as POST /v1/command does), through Main over
// a TestWorld whose workers answer as node agents (JobLab: pod, solo, empty). milo is a
// member on solo; ada on pod and solo; boss the fleet's admin.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/remote_command.h"
#include "cli/testing/lent_world.h"
#include "cli/testing/run_cli.h"
#include "control/testing/job_lab.h"

namespace tpufleet::cli {
namespace {

using cli_testing::Contains;
using cli_testing::kNoHome;
using nlohmann::json;

class RolesCommandsTest : public tpufleet::testing::JobLab {
 protected:
  void SetUp() override {
    JobLab::SetUp();
    Row("milo", "member", {"solo"});
    Row("ada", "member", {"pod", "solo"});
    Row("boss", "admin", {});
    Job("solo/w0", "jmiloaaa", "milo");
    Job("solo/w0", "jadaaaaa", "ada");
    for (int i = 0; i < 4; ++i) {
      Job("pod/w" + std::to_string(i), "jpodaaaa", "ada");
    }
    for (const char* node : {"pod", "solo"}) {
      ASSERT_TRUE(t_.store->AddEvent({0, t_.clock.Now(), "lab", node, "ready", ""}).ok());
    }
    ASSERT_TRUE(t_.store->AddEvent({0, t_.clock.Now(), "lab", "", "budget-reached", ""}).ok());
  }

  void Row(const std::string& name, const std::string& role, std::vector<std::string> nodes) {
    UserRecord u;
    u.fleet = "lab";
    u.name = name;
    u.role = role;
    u.nodes = std::move(nodes);
    ASSERT_TRUE(t_.store->PutUser(u).ok());
  }
  void Job(const std::string& worker, const std::string& id, const std::string& user) {
    api::JobOnWorker j;
    j.id = id;
    j.name = id.substr(1, 4);
    j.user = user;
    j.command = "sleep 600";
    j.worker = worker.back() - '0';
    j.state = JobState::kRunning;
    j.created_unix_ms = j.started_unix_ms = agents_.now_ms;
    agents_.Put(worker, j);
  }

  // `argv` run for `person` as serve runs it for them.
  cli_testing::Output As(const std::string& person, const std::vector<std::string>& argv) {
    Access access = person == "operator" ? Access::Everything("operator")
                                         : Access::Of(person, *t_.store->Users(""));
    return cli_testing::Served(app_, argv, {{"HOME", kNoHome}}, std::move(access));
  }
  json JsonAs(const std::string& person, std::vector<std::string> argv) {
    argv.push_back("--json");
    cli_testing::Output r = As(person, argv);
    EXPECT_EQ(r.code, 0) << r.err;
    return json::parse(r.out);
  }

  int opened_ = 0;
  App app_ = cli_testing::AppLending(t_.world, &opened_);
};

TEST_F(RolesCommandsTest, AMembersStatusListsOnlyTheNodesTheyMaySee) {
  cli_testing::Output milo = As("milo", {"status"});
  EXPECT_EQ(milo.code, 0) << milo.err;
  EXPECT_TRUE(Contains(milo.out, "solo")) << milo.out;
  EXPECT_FALSE(Contains(milo.out, "pod")) << milo.out;
  json j = JsonAs("milo", {"status"});
  ASSERT_EQ(j["nodes"].size(), 1u) << j.dump();
  EXPECT_EQ(j["nodes"][0]["node"], "solo");
  EXPECT_EQ(JsonAs("boss", {"status"})["nodes"].size(), 3u);
}

TEST_F(RolesCommandsTest, ANodeAMemberMayNotSeeIsAnsweredAsOneThatDoesNotExist) {
  cli_testing::Output hidden = As("milo", {"status", "pod"});
  cli_testing::Output unknown = As("milo", {"status", "pox"});
  EXPECT_EQ(hidden.code, 1);
  EXPECT_EQ(hidden.err, "tpufleet: error: no node named pod (see `tpufleet status`)\n");
  EXPECT_EQ(unknown.err, "tpufleet: error: no node named pox (see `tpufleet status`)\n");
  cli_testing::Output events = As("milo", {"events", "pod"});
  EXPECT_EQ(events.code, 1);
  EXPECT_EQ(events.err, "tpufleet: error: no node named pod (see `tpufleet status`)\n");
  cli_testing::Output jobs = As("milo", {"jobs", "pod"});
  EXPECT_EQ(jobs.code, 1);
  EXPECT_TRUE(Contains(jobs.err, "no node 'pod' in tpufleet's state")) << jobs.err;
  EXPECT_FALSE(Contains(jobs.err, "empty")) << "names only what milo sees: " << jobs.err;
  for (const auto& c : agents_.calls()) {
    EXPECT_EQ(c.worker.rfind("pod/", 0), std::string::npos) << "asked " << c.worker;
  }
}

TEST_F(RolesCommandsTest, AMembersJobsAreTheirOwnOnTheNodesTheySee) {
  cli_testing::Output milo = As("milo", {"jobs"});
  EXPECT_EQ(milo.code, 0) << milo.err;
  EXPECT_TRUE(Contains(milo.out, "jmiloaaa")) << milo.out;
  EXPECT_FALSE(Contains(milo.out, "jadaaaaa")) << milo.out;
  json j = JsonAs("milo", {"jobs"});
  ASSERT_EQ(j["jobs"].size(), 1u) << j.dump();
  EXPECT_EQ(j["jobs"][0]["id"], "jmiloaaa");
  json ada = JsonAs("ada", {"jobs"});
  EXPECT_EQ(ada["jobs"].size(), 2u) << ada.dump();
  EXPECT_EQ(JsonAs("boss", {"jobs"})["jobs"].size(), 3u);
  // The fleet's own listing asks the agents as root: jobs.list shows others' only to it.
  for (const auto& c : agents_.CallsOf(api::AgentOp::kJobList)) {
    EXPECT_EQ(c.command.rfind("sudo -n ", 0), 0u) << c.command;
  }
}

TEST_F(RolesCommandsTest, AMembersEventsAreTheirNodesAndTheirFleets) {
  json j = JsonAs("milo", {"events"});
  ASSERT_EQ(j.size(), 2u) << j.dump();
  EXPECT_EQ(j[0]["node"], "solo");
  EXPECT_EQ(j[1].value("node", ""), "");
  EXPECT_EQ(JsonAs("operator", {"events"}).size(), 3u);
}

TEST_F(RolesCommandsTest, TheAuditLogIsForAdminsThroughAServerAndForTheStatesHolderHere) {
  ASSERT_TRUE(t_.store->AddAudit({0, t_.clock.Now(), "milo", "jobs", "ok"}).ok());
  cli_testing::Output milo = As("milo", {"audit"});
  EXPECT_EQ(milo.code, 1);
  EXPECT_EQ(milo.err,
            "tpufleet: error: the audit log is for the admins of every fleet; milo is not one\n");
  cli_testing::Output boss = As("boss", {"audit"});
  EXPECT_EQ(boss.code, 0) << boss.err;
  EXPECT_TRUE(Contains(boss.out, "TIME")) << boss.out;
  EXPECT_TRUE(Contains(boss.out, "milo")) << boss.out;
  cli_testing::Output local = cli_testing::Tpufleet(app_, {"audit", "--json"});
  EXPECT_EQ(local.code, 0) << local.err;
  json j = json::parse(local.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["person"], "milo");
  EXPECT_EQ(j[0]["outcome"], "ok");
  EXPECT_EQ(cli_testing::Tpufleet(app_, {"audit", "--limit", "0"}).code, 2);
}

}  // namespace
}  // namespace tpufleet::cli
