// The store's team-server tables (issue 16), on SQLite and PostgreSQL: people's tokens
// found by their digest and forgotten per person; the audit log appended and read back
// newest-limited, oldest first.
#include <gtest/gtest.h>

#include <chrono>

#include "store/testing/store_backends.h"

namespace tpufleet {
namespace {

using TeamTablesTest = StoreTest;

TEST_P(TeamTablesTest, TokensAreFoundByDigestAndForgottenPerPerson) {
  auto store = Open();
  ASSERT_TRUE(store->PutToken({"d1", "milo", "invite", clock_.Now()}).ok());
  ASSERT_TRUE(store->PutToken({"d2", "milo", "laptop", clock_.Now()}).ok());
  ASSERT_TRUE(store->PutToken({"d3", "ada", "invite", clock_.Now()}).ok());

  Result<std::optional<TokenRecord>> found = store->FindToken("d2");
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->person, "milo");
  EXPECT_EQ((*found)->label, "laptop");
  EXPECT_EQ((*found)->created_at, clock_.Now());
  EXPECT_FALSE(store->FindToken("nope").value().has_value());

  ASSERT_TRUE(store->DeleteTokens("milo").ok());
  EXPECT_FALSE(store->FindToken("d1").value().has_value());
  EXPECT_FALSE(store->FindToken("d2").value().has_value());
  EXPECT_TRUE(store->FindToken("d3").value().has_value());
}

TEST_P(TeamTablesTest, TheAuditLogKeepsOrderAndGivesTheNewest) {
  auto store = Open();
  Clock::WallTime t0 = clock_.Now();
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(store->AddAudit({0, t0 + std::chrono::seconds(i), i % 2 ? "milo" : "operator",
                                 "jobs " + std::to_string(i), i == 3 ? "refused: not yours" : "ok"})
                    .ok());
  }
  Result<std::vector<AuditRecord>> all = store->Audit(std::nullopt, 100);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 5u);
  EXPECT_EQ(all->front().action, "jobs 0");
  EXPECT_LT(all->front().id, all->back().id);
  EXPECT_EQ((*all)[3].person, "milo");
  EXPECT_EQ((*all)[3].outcome, "refused: not yours");

  std::vector<AuditRecord> newest = store->Audit(std::nullopt, 2).value();
  ASSERT_EQ(newest.size(), 2u);
  EXPECT_EQ(newest[0].action, "jobs 3");
  EXPECT_EQ(newest[1].action, "jobs 4");

  std::vector<AuditRecord> since = store->Audit(t0 + std::chrono::seconds(3), 100).value();
  ASSERT_EQ(since.size(), 2u);
  EXPECT_EQ(since[0].time, t0 + std::chrono::seconds(3));
}

INSTANTIATE_TEST_SUITE_P(Backends, TeamTablesTest, ::testing::ValuesIn(kStoreBackends),
                         StoreBackendName);

}  // namespace
}  // namespace tpufleet
