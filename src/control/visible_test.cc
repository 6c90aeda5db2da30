// What a caller sees of the store (visible.h), over a real SQLite store in memory.
#include "control/visible.h"

#include <gtest/gtest.h>

#include "api/agent.h"
#include "store/sqlite_store.h"

namespace tpufleet {
namespace {

class VisibleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = SqliteStore::Open(":memory:").value();
    Node("a", {{"team", "x"}});
    Node("b", {});
    User("milo", "member", {"team=x"});
    User("boss", "admin", {});
    Event("a", "ready");
    Event("b", "ready");
    Event("gone", "deleted");  // a node no longer in the store
    Event("", "budget-reached");
  }
  void Node(const std::string& name, std::map<std::string, std::string> labels) {
    NodeRecord n;
    n.fleet = "lab";
    n.name = name;
    n.labels = std::move(labels);
    ASSERT_TRUE(store_->PutNode(n).ok());
  }
  void User(const std::string& name, const std::string& role, std::vector<std::string> nodes) {
    UserRecord u;
    u.fleet = "lab";
    u.name = name;
    u.role = role;
    u.nodes = std::move(nodes);
    ASSERT_TRUE(store_->PutUser(u).ok());
  }
  void Event(const std::string& node, const std::string& kind) {
    ASSERT_TRUE(store_->AddEvent({0, Clock::WallTime{} + std::chrono::hours(1), "lab", node, kind, ""})
                    .ok());
  }
  Access Of(const std::string& person) { return Access::Of(person, *store_->Users("")); }
  std::vector<std::string> NodesOf(const std::vector<EventRecord>& events) {
    std::vector<std::string> out;
    for (const EventRecord& e : events) {
      out.push_back(e.node);
    }
    return out;
  }

  std::unique_ptr<SqliteStore> store_;
};

TEST_F(VisibleTest, AMemberSeesTheEventsOfTheNodesTheirSelectorMatchesAndTheirFleets) {
  EXPECT_EQ(NodesOf(*VisibleEvents(*store_, Of("milo"), {})),
            (std::vector<std::string>{"a", ""}));
  EXPECT_EQ(NodesOf(*VisibleEvents(*store_, Of("boss"), {})),
            (std::vector<std::string>{"a", "b", "gone", ""}));
  EventQuery b;
  b.node = "b";
  EXPECT_TRUE(VisibleEvents(*store_, Of("milo"), b)->empty());
  EventQuery newest;
  newest.limit = 1;
  EXPECT_EQ(NodesOf(*VisibleEvents(*store_, Of("milo"), newest)),
            std::vector<std::string>{""});
  EXPECT_TRUE(VisibleEvents(*store_, Access::Of("stranger", {}), {})->empty());
}

// Each part a member sees is the newest of its own: many events of a node milo may not see
// hide neither the fleet's own events nor his node's.
TEST_F(VisibleTest, AMembersNewestEventsAreNotCrowdedOutByAnotherNodes) {
  for (int i = 0; i < 5; ++i) {
    Event("b", "ssh-failed");
  }
  EventQuery newest;
  newest.limit = 2;
  EXPECT_EQ(NodesOf(*VisibleEvents(*store_, Of("milo"), newest)),
            (std::vector<std::string>{"a", ""}));
  EXPECT_EQ(NodesOf(*VisibleEvents(*store_, Of("boss"), newest)),
            (std::vector<std::string>{"b", "b"}));
}

TEST_F(VisibleTest, ARestartableJobIsItsSpecsUsers) {
  api::JobSpec spec;
  spec.id = "j1";
  spec.user = "milo";
  JobRecord mine;
  mine.fleet = "lab";
  mine.id = "j1";
  mine.spec_json = api::ToJson(spec);
  JobRecord logins = mine;
  logins.id = "j2";
  logins.spec_json = "{}";
  EXPECT_EQ(RestartableJobUser(mine), "milo");
  EXPECT_EQ(RestartableJobUser(logins), "");
  EXPECT_EQ(VisibleJobs(Of("milo"), {mine, logins}).size(), 1u);
  EXPECT_EQ(VisibleJobs(Of("boss"), {mine, logins}).size(), 2u);
}

TEST_F(VisibleTest, Issue17AnAdminSeesTheFleetsLedgerAndAMemberWhatIsBilledToThem) {
  auto stretch = [](std::string fleet, std::string node, std::string owner) {
    SpendRecord s;
    s.fleet = std::move(fleet);
    s.node = std::move(node);
    s.owner = std::move(owner);
    s.state = "READY";
    return s;
  };
  // milo's job ran on boss's node b for a while: that share is billed to milo.
  Clock::WallTime t0{};
  JobRunRecord milos{"lab", "b", "j1", "train", "milo", "milo", t0 + std::chrono::hours(1),
                     t0 + std::chrono::hours(2)};
  std::vector<SpendShare> ledger = ShareSpend(
      {stretch("lab", "a", "milo"), stretch("lab", "b", "boss"), stretch("ops", "c", "milo")},
      {milos});
  auto shares = [](const std::vector<SpendShare>& v) {
    std::vector<std::string> out;
    for (const SpendShare& s : v) {
      out.push_back(s.part.fleet + "/" + s.part.node + (s.job.empty() ? "" : " " + s.job));
    }
    return out;
  };
  using Names = std::vector<std::string>;
  EXPECT_EQ(shares(VisibleSpend(Of("boss"), ledger)),
            (Names{"lab/a", "lab/b", "lab/b train (j1)", "lab/b"}));
  // Billed to milo in ops too, but milo is not on ops: it does not exist for them.
  EXPECT_EQ(shares(VisibleSpend(Of("milo"), ledger)), (Names{"lab/a", "lab/b train (j1)"}));
  EXPECT_TRUE(VisibleSpend(Of("stranger"), ledger).empty());
  EXPECT_EQ(VisibleSpend(Access::Everything("local"), ledger).size(), 5u);

  std::vector<FleetRecord> fleets = {{"lab", "boss", 10, std::nullopt, {}},
                                     {"ops", "zed", std::nullopt, 99, {}}};
  ASSERT_EQ(VisibleFleets(Of("boss"), fleets).size(), 1u);
  EXPECT_EQ(VisibleFleets(Of("boss"), fleets)[0].name, "lab");
  EXPECT_TRUE(VisibleFleets(Of("milo"), fleets).empty());  // a budget left is the fleet's
  EXPECT_EQ(VisibleFleets(Access::Everything("local"), fleets).size(), 2u);
}

TEST_F(VisibleTest, WhatSpansFleetsIsForAnAdminOfEveryOne) {
  EXPECT_TRUE(*MaySeeAllFleets(*store_, Access::Everything("local")));
  EXPECT_TRUE(*MaySeeAllFleets(*store_, Of("boss")));
  EXPECT_FALSE(*MaySeeAllFleets(*store_, Of("milo")));
  UserRecord other;
  other.fleet = "other";
  other.name = "milo";
  ASSERT_TRUE(store_->PutUser(other).ok());
  EXPECT_FALSE(*MaySeeAllFleets(*store_, Of("boss"))) << "boss is not on fleet other";
}

}  // namespace
}  // namespace tpufleet
