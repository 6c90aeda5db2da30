// SqlStore's tables for the team server (schema step 10 in sql_store.cc): per-person
// tokens, kept by their SHA-256, and the audit log.
#include <algorithm>
#include <climits>

#include "store/sql_driver.h"
#include "store/sql_store.h"

namespace tpufleet {

using sql::Row;

Status SqlStore::PutToken(const TokenRecord& t) {
  static const std::string kUpsert =
      sql::UpsertSql("tokens", {"sha256", "person", "label", "created_at"}, 1);
  return Write(kUpsert, t.sha256, t.person, t.label, t.created_at);
}

Result<std::optional<TokenRecord>> SqlStore::FindToken(std::string_view sha256) {
  TPUFLEET_ASSIGN_OR_RETURN(
      std::vector<TokenRecord> found,
      Select<TokenRecord>(
          "SELECT sha256, person, label, created_at FROM tokens WHERE sha256 = ?1",
          [](const Row& q) -> Result<TokenRecord> {
            return TokenRecord{q.Text(0), q.Text(1), q.Text(2), q.Time(3)};
          },
          sha256));
  if (found.empty()) {
    return std::optional<TokenRecord>();
  }
  return std::optional<TokenRecord>(std::move(found.front()));
}

Status SqlStore::DeleteTokens(std::string_view person) {
  return Write("DELETE FROM tokens WHERE person = ?1", person);
}

Status SqlStore::AddAudit(const AuditRecord& r) {
  return Write("INSERT INTO audit (time, person, action, outcome) VALUES (?1, ?2, ?3, ?4)",
               r.time, r.person, r.action, r.outcome);
}

Result<std::vector<AuditRecord>> SqlStore::Audit(std::optional<Clock::WallTime> since,
                                                 int64_t limit) {
  TPUFLEET_ASSIGN_OR_RETURN(
      std::vector<AuditRecord> out,
      Select<AuditRecord>(
          "SELECT id, time, person, action, outcome FROM audit WHERE time >= ?1 "
          "ORDER BY id DESC LIMIT ?2",
          [](const Row& q) -> Result<AuditRecord> {
            return AuditRecord{q.Int(0), q.Time(1), q.Text(2), q.Text(3), q.Text(4)};
          },
          since ? sql::ToMicros(*since) : INT64_MIN, limit));
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace tpufleet
