// SqlStore's users table: the collaborators `tpufleet users` added (schema step 8 in
// sql_store.cc). Keys and node selectors are JSON arrays of strings.
#include <nlohmann/json.hpp>

#include "store/sql_driver.h"
#include "store/sql_store.h"

namespace tpufleet {

using sql::Row;
using sql::StringsFromJson;

Result<std::vector<UserRecord>> SqlStore::Users(std::string_view fleet) {
  return Select<UserRecord>(
      "SELECT fleet, name, keys, sudo, nodes, role, created_at, updated_at FROM users "
      "WHERE ?1 = '' OR fleet = ?1 ORDER BY fleet, name",
      [](const Row& q) -> Result<UserRecord> {
        UserRecord u;
        u.fleet = q.Text(0);
        u.name = q.Text(1);
        TPUFLEET_ASSIGN_OR_RETURN(u.keys, StringsFromJson(q.Text(2), "the keys of user " + u.name));
        u.sudo = q.Int(3) != 0;
        TPUFLEET_ASSIGN_OR_RETURN(u.nodes,
                                  StringsFromJson(q.Text(4), "the nodes of user " + u.name));
        u.role = q.Text(5);
        u.created_at = q.Time(6);
        u.updated_at = q.Time(7);
        return u;
      },
      fleet);
}

Status SqlStore::PutUser(const UserRecord& u) {
  static const std::string kUpsert = sql::UpsertSql(
      "users", {"fleet", "name", "keys", "sudo", "nodes", "role", "created_at", "updated_at"}, 2);
  return Write(kUpsert, u.fleet, u.name, nlohmann::json(u.keys).dump(), u.sudo,
               nlohmann::json(u.nodes).dump(), u.role, u.created_at, u.updated_at);
}

Status SqlStore::DeleteUser(std::string_view fleet, std::string_view name) {
  return Write("DELETE FROM users WHERE fleet = ?1 AND name = ?2", fleet, name);
}

}  // namespace tpufleet
