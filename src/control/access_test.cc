// Access (who may see and do what through a team server) and people's tokens, over a
// real SQLite store in memory.
#include "control/access.h"

#include <gtest/gtest.h>

#include "control/person_tokens.h"
#include "store/sqlite_store.h"

namespace tpufleet {
namespace {

UserRecord Row(std::string fleet, std::string name, std::string role,
               std::vector<std::string> nodes = {}) {
  UserRecord u;
  u.fleet = std::move(fleet);
  u.name = std::move(name);
  u.role = std::move(role);
  u.nodes = std::move(nodes);
  return u;
}

NodeRecord Node(std::string fleet, std::string name, std::map<std::string, std::string> labels = {}) {
  NodeRecord n;
  n.fleet = std::move(fleet);
  n.name = std::move(name);
  n.labels = std::move(labels);
  return n;
}

TEST(Access, EverythingIsAdminEverywhere) {
  Access a = Access::Everything("operator");
  EXPECT_TRUE(a.everything());
  EXPECT_TRUE(a.IsAdminOf("any"));
  EXPECT_TRUE(a.MayUseNode(Node("any", "n")));
  EXPECT_TRUE(a.MayChangeJob("any", "somebody"));
}

TEST(Access, AMemberSeesTheNodesTheySelectAndOnlyTheirOwnJobs) {
  std::vector<UserRecord> rows = {Row("lab", "milo", "member", {"pod", "team=a"}),
                                  Row("lab", "ada", "admin"), Row("other", "ada", "viewer")};
  Access milo = Access::Of("milo", rows);
  EXPECT_EQ(milo.who(), "milo");
  EXPECT_FALSE(milo.everything());
  EXPECT_EQ(milo.RoleIn("lab"), Role::kMember);
  EXPECT_EQ(milo.RoleIn("other"), std::nullopt);
  EXPECT_TRUE(milo.MayUseNode(Node("lab", "pod")));
  EXPECT_TRUE(milo.MaySeeNode(Node("lab", "eval", {{"team", "a"}})));
  EXPECT_FALSE(milo.MaySeeNode(Node("lab", "solo")));
  EXPECT_FALSE(milo.MaySeeNode(Node("other", "pod")));
  EXPECT_TRUE(milo.MaySeeJob("lab", "milo"));
  EXPECT_FALSE(milo.MaySeeJob("lab", "ada"));
  EXPECT_TRUE(milo.MayChangeJob("lab", "milo"));
  EXPECT_FALSE(milo.MayChangeJob("lab", "ada"));
  EXPECT_FALSE(milo.MaySeeJob("other", "milo"));  // not on that fleet at all

  Access ada = Access::Of("ada", rows);
  EXPECT_TRUE(ada.IsAdminOf("lab"));
  EXPECT_TRUE(ada.MayChangeJob("lab", "milo"));
  EXPECT_TRUE(ada.MaySeeNode(Node("lab", "solo")));
  // A viewer sees their nodes and runs nothing, not even as themselves.
  EXPECT_EQ(ada.RoleIn("other"), Role::kViewer);
  EXPECT_TRUE(ada.MaySeeNode(Node("other", "x")));
  EXPECT_FALSE(ada.MayUseNode(Node("other", "x")));
  EXPECT_TRUE(ada.MaySeeJob("other", "ada"));
  EXPECT_FALSE(ada.MayChangeJob("other", "ada"));

  Access nobody = Access::Of("eve", rows);
  EXPECT_FALSE(nobody.MaySeeNode(Node("lab", "pod")));
  EXPECT_FALSE(nobody.MaySeeJob("lab", "eve"));
}

TEST(Access, IsTheSameOnlyForTheSameCallerAllowedTheSame) {
  std::vector<UserRecord> rows = {Row("lab", "milo", "member", {"pod"}),
                                  Row("lab", "ada", "admin")};
  Access milo = Access::Of("milo", rows);
  UserRecord rekeyed = rows[0];
  rekeyed.keys = {"ssh-ed25519 AAAA new"};  // what they may see is not in their keys
  EXPECT_TRUE(milo.SameAs(Access::Of("milo", {rekeyed})));
  EXPECT_FALSE(milo.SameAs(Access::Of("ada", rows)));
  EXPECT_FALSE(milo.SameAs(Access::Of("milo", {Row("lab", "milo", "admin", {"pod"})})));
  EXPECT_FALSE(milo.SameAs(Access::Of("milo", {Row("lab", "milo", "member", {"pod", "eval"})})));
  EXPECT_FALSE(milo.SameAs(Access::Of("milo", {rows[0], Row("other", "milo", "viewer")})));
  EXPECT_FALSE(milo.SameAs(Access::Everything("milo")));
  EXPECT_TRUE(Access::Everything("operator").SameAs(Access::Everything("operator")));
}

TEST(Access, RolesAreTheirWords) {
  EXPECT_EQ(ParseRole("admin").value(), Role::kAdmin);
  Result<Role> bad = ParseRole("root");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "a role is member, viewer or admin, not 'root'");
  EXPECT_EQ(Access::Of("x", {Row("lab", "x", "superuser")}).RoleIn("lab"), Role::kViewer);
}

TEST(PersonTokens, AreKeptByDigestAndReplacedOnRequest) {
  std::unique_ptr<SqliteStore> store = SqliteStore::Open(":memory:").value();
  Result<std::string> first = IssuePersonToken(*store, "milo", "invite", {}, false);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->rfind(kPersonTokenPrefix, 0), 0u);
  EXPECT_FALSE(store->FindToken(*first).value().has_value());  // not kept in the clear
  EXPECT_EQ(FindPersonToken(*store, *first).value().person, "milo");

  std::string second = IssuePersonToken(*store, "milo", "invite", {}, true).value();
  EXPECT_NE(second, *first);
  Result<TokenRecord> old = FindPersonToken(*store, *first);
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(FindPersonToken(*store, second).value().person, "milo");
}

}  // namespace
}  // namespace tpufleet
