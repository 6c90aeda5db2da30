// Collaborators (issue 16): who gets an account on a node (UsersOfNode, the one answer up,
// recreate and the users commands share), the checks that refuse bad input before
// anything changes, and `users add / set / remove` applying the node's whole list on the
// workers of the READY nodes they select.
#include "control/users.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "control/person_tokens.h"
#include "control/targets.h"
#include "control/testing/test_world.h"
#include "control/testing/up_specs.h"
#include "control/up.h"

namespace tpufleet {
namespace {

using testing::kAliceKey;
using testing::kBobKey;
using testing::SmallNode;
using testing::TestWorld;
using testing::Trainer;

// Fleet lab: alice (spec, fleet-wide), a v4-32 `trainer` labelled team=a and a v4-8 `eval`.
FleetSpec LabSpec(TestWorld& t) {
  return t.Spec(std::string("fleet: lab\nproject: ") + testing::kProject + "\nusers:\n" +
                "  - {name: alice, keys: [\"" + kAliceKey + "\"], sudo: true}\n" +
                "nodes:\n  - name: trainer\n    type: v4-32\n    zones: [us-central2-b]\n" +
                "    labels: {team: a}\n" + SmallNode("eval"));
}

UserRecord Stored(std::string name, std::vector<std::string> nodes, std::string fleet = "lab") {
  UserRecord u;
  u.fleet = std::move(fleet);
  u.name = std::move(name);
  u.keys = {kBobKey};
  u.nodes = std::move(nodes);
  return u;
}

std::vector<std::string> UserNames(const std::vector<UserSpec>& users) {
  std::vector<std::string> out;
  for (const UserSpec& u : users) {
    out.push_back(u.name + (u.sudo ? "+sudo" : ""));
  }
  return out;
}

// The users of each accounts.apply request, "alias: name name…", and its removals.
std::vector<std::string> Requests(const TestWorld& t, size_t from = 0) {
  std::vector<std::string> out;
  auto all = t.workers.AccountRequests();
  for (size_t i = from; i < all.size(); ++i) {
    std::string line = all[i].first + ":";
    for (const api::AccountSpec& u : all[i].second.users) {
      line += " " + u.name + (u.sudo ? "+sudo" : "");
    }
    for (const api::AccountRemoval& x : all[i].second.remove) {
      line += std::string(" -") + x.name + (x.purge ? "(purge)" : "");
    }
    out.push_back(line);
  }
  return out;
}

TEST(UsersOfNode, AreTheSpecsThenTheStoredOnesThatSelectTheNode) {
  TestWorld t;
  FleetSpec spec = LabSpec(t);
  std::vector<UserRecord> stored = {
      Stored("zed", {"eval"}),     Stored("milo", {}),
      Stored("ann", {"team=a"}),   Stored("kim", {"team=b", "all"}),
      Stored("olga", {}, "other"),  // another fleet's
      Stored("alice", {}),          // the spec decides
  };
  stored[1].sudo = true;
  EXPECT_EQ(UserNames(UsersOfNode(spec, spec.nodes[0], "trainer", stored)),
            (std::vector<std::string>{"alice+sudo", "ann", "kim", "milo+sudo"}));
  EXPECT_EQ(UserNames(UsersOfNode(spec, spec.nodes[1], "eval", stored)),
            (std::vector<std::string>{"alice+sudo", "kim", "milo+sudo", "zed"}));
  EXPECT_EQ(UserNames(UsersOfNode(spec, spec.nodes[1], "eval", {})),
            (std::vector<std::string>{"alice+sudo"}));
}

TEST(UsersOfNode, SelectorsAreWholeNodesByNameLabelOrAll) {
  EXPECT_TRUE(CheckNodeSelector("trainer").ok());
  EXPECT_TRUE(CheckNodeSelector("team=a,role=x").ok());
  EXPECT_TRUE(CheckNodeSelector("all").ok());
  EXPECT_EQ(CheckNodeSelector("trainer:1").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckNodeSelector("team=").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckNodeSelector("Bad_Node").code(), StatusCode::kInvalidArgument);
  std::map<std::string, std::string> labels = {{"team", "a"}, {"role", "x"}};
  EXPECT_TRUE(SelectsNode("team=a,role=x", "n", labels));
  EXPECT_FALSE(SelectsNode("team=a,role=y", "n", labels));
  EXPECT_TRUE(SelectsNode("n", "n", {}));
  EXPECT_FALSE(SelectsNode("n", "n-1", {}));
}

class UsersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    spec_ = LabSpec(t_);
    UpAll();
  }
  void UpAll() {
    UpReport r = t_.Up(spec_);
    ASSERT_EQ(r.nodes.size(), 2u);
    for (const NodeOutcome& n : r.nodes) {
      ASSERT_EQ(n.status, Status::Ok()) << n.node;
    }
  }
  UserChange Milo() {
    UserChange c;
    c.name = "milo";
    c.keys = std::vector<std::string>{kBobKey};
    return c;
  }

  TestWorld t_;
  FleetSpec spec_;
};

TEST_F(UsersTest, AddAppliesTheNodesWholeListOnEveryWorkerOfTheNodesItSelects) {
  size_t before = t_.workers.AccountRequests().size();
  UserChange c = Milo();
  c.nodes = std::vector<std::string>{"trainer"};
  std::vector<std::string> seen;
  Result<UsersOutcome> out = AddUser(t_.world, spec_, c, [&](const UserNodeResult& n, bool done) {
    seen.push_back(n.node + (done ? " done" : " on " + std::to_string(n.workers)));
  });
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out->ok());
  EXPECT_EQ(seen, (std::vector<std::string>{"trainer on 4", "trainer done"}));
  EXPECT_EQ(
      Requests(t_, before),
      (std::vector<std::string>{"trainer/w0: alice+sudo milo", "trainer/w1: alice+sudo milo",
                                "trainer/w2: alice+sudo milo", "trainer/w3: alice+sudo milo"}));
  Result<std::vector<UserRecord>> stored = t_.store->Users("lab");
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0].role, "member");
  EXPECT_FALSE((*stored)[0].sudo);

  // Promoted, and moved to every node: eval gets him, trainer gets sudo.
  before = t_.workers.AccountRequests().size();
  UserChange promote;
  promote.name = "milo";
  promote.sudo = true;
  promote.nodes = std::vector<std::string>{};
  ASSERT_TRUE(SetUser(t_.world, spec_, promote).ok());
  std::vector<std::string> got = Requests(t_, before);
  EXPECT_EQ(got.size(), 5u);
  EXPECT_EQ(got.front(), "eval/w0: alice+sudo milo+sudo");  // nodes in name order
  EXPECT_EQ(got.back(), "trainer/w3: alice+sudo milo+sudo");

  // `up` then finds every node's list as applied: it sends nothing.
  before = t_.workers.AccountRequests().size();
  UpAll();
  EXPECT_EQ(Requests(t_, before), std::vector<std::string>{});
}

// `up` reapplies a node's accounts when its list changed (the spec's users, or the
// stored collaborators however they got there), on its workers, nothing recreated; and
// sends nothing when it did not.
TEST_F(UsersTest, UpReappliesTheAccountsOfANodeWhoseListChangedAndOnlyThen) {
  int creates = t_.cloud.creates();
  size_t before = t_.workers.AccountRequests().size();
  UpAll();
  EXPECT_EQ(Requests(t_, before), std::vector<std::string>{});

  spec_.users.push_back({"zoe", {kBobKey}, false, 9});  // the spec's users edited
  before = t_.workers.AccountRequests().size();
  UpReport r = t_.Up(spec_);
  std::vector<std::string> got = Requests(t_, before);
  std::sort(got.begin(), got.end());  // up's workers answer in any order
  EXPECT_EQ(got,
            (std::vector<std::string>{"eval-w0: alice+sudo zoe", "trainer-w0: alice+sudo zoe",
                                      "trainer-w1: alice+sudo zoe", "trainer-w2: alice+sudo zoe",
                                      "trainer-w3: alice+sudo zoe"}));
  EXPECT_TRUE(r.nodes[0].changed);

  // A collaborator stored by another process (a users command that could not reach the
  // node, another serve): only the node it selects.
  ASSERT_TRUE(t_.store->PutUser(Stored("milo", {"eval"})).ok());
  before = t_.workers.AccountRequests().size();
  UpAll();
  EXPECT_EQ(Requests(t_, before), (std::vector<std::string>{"eval-w0: alice+sudo zoe milo"}));
  before = t_.workers.AccountRequests().size();
  UpAll();
  EXPECT_EQ(Requests(t_, before), std::vector<std::string>{});
  EXPECT_EQ(t_.cloud.creates(), creates) << "nothing was made again";
}

// `users remove` on a node that is not READY: kept pending, and sent (the account locked,
// its processes stopped) by the first `up` that finds the node back.
TEST_F(UsersTest, ARemovalANodeMissedIsSentWhenItIsBack) {
  ASSERT_TRUE(AddUser(t_.world, spec_, Milo()).ok());
  NodeRecord eval = t_.Record("eval");
  eval.state = NodeState::kPreempted;
  ASSERT_TRUE(t_.store->PutNode(eval).ok());
  size_t before = t_.workers.AccountRequests().size();
  Result<UsersOutcome> out = RemoveUser(t_.world, spec_, "milo", true);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out->ok());
  EXPECT_EQ(out->nodes[0].skipped, "PREEMPTED: applied when `tpufleet up` or serve brings it back");
  EXPECT_EQ(Requests(t_, before).size(), 4u) << "trainer's workers only";

  before = t_.workers.AccountRequests().size();
  UpAll();  // eval is READY in the cloud: back
  EXPECT_EQ(Requests(t_, before), (std::vector<std::string>{"eval-w0: alice+sudo -milo(purge)"}));
  before = t_.workers.AccountRequests().size();
  UpAll();
  EXPECT_EQ(Requests(t_, before), std::vector<std::string>{}) << "sent once";

  // Removed and added again while a node was away: the removal is void there.
  eval = t_.Record("eval");
  eval.state = NodeState::kPreempted;
  ASSERT_TRUE(t_.store->PutNode(eval).ok());
  ASSERT_TRUE(AddUser(t_.world, spec_, Milo()).ok());
  ASSERT_TRUE(RemoveUser(t_.world, spec_, "milo", false).ok());
  ASSERT_TRUE(AddUser(t_.world, spec_, Milo()).ok());
  before = t_.workers.AccountRequests().size();
  UpAll();
  EXPECT_EQ(Requests(t_, before), (std::vector<std::string>{"eval-w0: alice+sudo milo"}));
}

TEST_F(UsersTest, BadInputIsRefusedWithOneMessageAndChangesNothing) {
  size_t before = t_.workers.AccountRequests().size();
  auto refused = [&](UserChange c, const std::string& part) {
    Result<UsersOutcome> out = AddUser(t_.world, spec_, c);
    ASSERT_FALSE(out.ok()) << c.name;
    EXPECT_NE(out.status().message().find(part), std::string::npos) << out.status().message();
  };
  UserChange c = Milo();
  c.name = "root";
  refused(c, "root");
  c.name = "alice";
  refused(c, "is a user of fleet lab's spec (line 4)");
  c.name = t_.world.login;
  refused(c, "tpufleet itself logs in as");
  c = Milo();
  c.keys = std::vector<std::string>{"ssh-ed25519 not-base64"};
  refused(c, "the key of milo");
  c = Milo();
  c.keys = std::vector<std::string>{};
  refused(c, "--key");
  c = Milo();
  c.nodes = std::vector<std::string>{"trainer:1"};
  refused(c, "names workers");
  c = Milo();
  c.role = "boss";
  refused(c, "not 'boss'");
  EXPECT_TRUE(t_.store->Users("")->empty());
  EXPECT_EQ(t_.workers.AccountRequests().size(), before);

  ASSERT_TRUE(AddUser(t_.world, spec_, Milo()).ok());
  Result<UsersOutcome> again = AddUser(t_.world, spec_, Milo());
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  UserChange ghost;
  ghost.name = "ghost";
  EXPECT_EQ(SetUser(t_.world, spec_, ghost).status().code(), StatusCode::kNotFound);
}

TEST_F(UsersTest, RemoveForgetsTheUserAndHasItsNodesTakeTheAccountAway) {
  ASSERT_TRUE(AddUser(t_.world, spec_, Milo()).ok());
  size_t before = t_.workers.AccountRequests().size();
  Result<UsersOutcome> out = RemoveUser(t_.world, spec_, "milo", false);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out->ok());
  EXPECT_EQ(out->nodes.size(), 2u);
  EXPECT_TRUE(t_.store->Users("lab")->empty());
  std::vector<std::string> got = Requests(t_, before);
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[0], "eval/w0: alice+sudo -milo");
  EXPECT_EQ(got[4], "trainer/w3: alice+sudo -milo");

  EXPECT_EQ(RemoveUser(t_.world, spec_, "milo", false).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(RemoveUser(t_.world, spec_, "alice", false).status().code(),
            StatusCode::kInvalidArgument);
  // A purge after the remove reaches every READY node of the fleet.
  before = t_.workers.AccountRequests().size();
  ASSERT_TRUE(RemoveUser(t_.world, spec_, "milo", true).ok());
  got = Requests(t_, before);
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[2], "trainer/w1: alice+sudo -milo(purge)");
}

// An invite of someone removed from their last fleet lets no one in; while they are on
// another fleet, it still does.
TEST_F(UsersTest, RemoveForgetsTheTokensOfSomeoneOnNoFleetAnyMore) {
  ASSERT_TRUE(AddUser(t_.world, spec_, Milo()).ok());
  UserRecord elsewhere;
  elsewhere.fleet = "other";
  elsewhere.name = "milo";
  elsewhere.keys = {kBobKey};
  ASSERT_TRUE(t_.store->PutUser(elsewhere).ok());
  std::string token = IssuePersonToken(*t_.store, "milo", "invite", {}, false).value();
  ASSERT_TRUE(RemoveUser(t_.world, spec_, "milo", false).ok());
  EXPECT_EQ(FindPersonToken(*t_.store, token).value().person, "milo") << "still on other";

  ASSERT_TRUE(t_.store->DeleteUser("other", "milo").ok());
  ASSERT_TRUE(AddUser(t_.world, spec_, Milo()).ok());
  ASSERT_TRUE(RemoveUser(t_.world, spec_, "milo", false).ok());
  EXPECT_EQ(FindPersonToken(*t_.store, token).status().code(), StatusCode::kPermissionDenied);
}

// A node that is not READY is skipped and says when it gets the change.
TEST_F(UsersTest, ANodeNotReadyIsSkippedUntilUpOrServeBringsItBack) {
  NodeRecord eval = t_.Record("eval");
  eval.state = NodeState::kPreempted;
  ASSERT_TRUE(t_.store->PutNode(eval).ok());
  Result<UsersOutcome> out = AddUser(t_.world, spec_, Milo());
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->nodes.size(), 2u);
  EXPECT_EQ(out->nodes[0].node, "eval");
  EXPECT_EQ(out->nodes[0].skipped, "PREEMPTED: applied when `tpufleet up` or serve brings it back");
  EXPECT_TRUE(out->ok());
}

}  // namespace
}  // namespace tpufleet
