// What the audit log keeps of a command line: bounded, and never a secret.
#include "server/audit.h"

#include <gtest/gtest.h>

namespace tpufleet::server {
namespace {

TEST(AuditAction, KeepsTheCommandAndHidesEnvValuesTokensAndTheJobsCommand) {
  EXPECT_EQ(AuditAction({"jobs", "--json"}), "jobs --json");
  EXPECT_EQ(AuditAction({"run", "a", "--env", "K=secret", "--env=L=also", "--", "python",
                         "t.py", "--api-key", "x"}),
            "run a --env K=… --env=L=… -- …");
  EXPECT_EQ(AuditAction({"x", "--token", "t0k", "--api-key=k3y", "--since", "1h"}),
            "x --token … --api-key=… --since 1h");
  EXPECT_EQ(AuditAction({"run", "a", "--"}), "run a --");
}

TEST(AuditAction, ALongLineIsCutWithinItsBound) {
  std::string action = AuditAction({"status", std::string(2000, 'n')});
  EXPECT_EQ(action.size(), kMaxAuditActionBytes);
  EXPECT_EQ(action.substr(action.size() - 3), "…");
  // Not inside a UTF-8 sequence: é is two bytes.
  std::string accents;
  for (int i = 0; i < 400; ++i) {
    accents += "é";
  }
  action = AuditAction({accents});
  EXPECT_LE(action.size(), kMaxAuditActionBytes);
  EXPECT_EQ(action.substr(0, action.size() - 3).size() % 2, 0u);
}

}  // namespace
}  // namespace tpufleet::server
