#include "app/state_store.h"

#include <string_view>

#include "store/postgres_store.h"
#include "store/sqlite_store.h"

namespace tpufleet::app {
namespace {

constexpr std::string_view kSqliteScheme = "sqlite:";

bool IsPostgresUrl(std::string_view s) {
  return s.rfind("postgresql://", 0) == 0 || s.rfind("postgres://", 0) == 0;
}

}  // namespace

Result<StoreLocation> FindStore(const std::optional<std::string>& flag,
                                const std::map<std::string, std::string>& env,
                                const std::string& state_dir) {
  std::string text;
  if (flag) {
    text = *flag;
  } else if (auto it = env.find(kStoreEnv); it != env.end() && !it->second.empty()) {
    text = it->second;
  } else {
    return StoreLocation{false, state_dir + "/state.db", state_dir + "/state.db"};
  }
  if (IsPostgresUrl(text)) {
    std::string shown = RedactedPostgresUrl(text);
    if (shown.empty()) {
      return InvalidArgumentError(
          "the store's URL does not parse (postgresql://user@host:port/db or "
          "postgresql:///db?host=/socket/dir)");
    }
    if (flag && PostgresUrlHasPassword(text)) {
      return InvalidArgumentError(
          "--store " + shown +
          ": the URL carries a password, and argv is readable by every user of this machine; "
          "put the password in ~/.pgpass or the file PGPASSFILE names (libpq reads them), or "
          "give the whole URL in " +
          std::string(kStoreEnv) + " instead");
    }
    return StoreLocation{true, text, shown};
  }
  std::string path = text.rfind(kSqliteScheme, 0) == 0 ? text.substr(kSqliteScheme.size()) : text;
  if (path.empty()) {
    return InvalidArgumentError(
        "the store is empty: give sqlite:PATH, a path, or postgresql://user@host:port/db");
  }
  return StoreLocation{false, path, path};
}

Result<std::unique_ptr<Store>> OpenStore(const StoreLocation& where) {
  if (where.postgres) {
    TPUFLEET_ASSIGN_OR_RETURN(std::unique_ptr<PostgresStore> s, PostgresStore::Open(where.target));
    return std::unique_ptr<Store>(std::move(s));
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::unique_ptr<SqliteStore> s, SqliteStore::Open(where.target));
  return std::unique_ptr<Store>(std::move(s));
}

}  // namespace tpufleet::app
