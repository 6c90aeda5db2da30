// Where a fleet's state store is, and opening it: the one place tpufleet chooses between
// SQLite and PostgreSQL (by the location's scheme).
//
// The location is, first found: the command's --store flag (serve has one), then
// $TPUFLEET_STORE, then STATE/state.db. It is "sqlite:PATH" or a plain path (a SQLite
// file), or a libpq URL, postgresql://user@host:port/db or postgresql:///db?host=/dir
// (postgres:// too). A password in the URL is refused when it came from argv, which
// every user of the machine can read (ps); libpq reads one from PGPASSFILE or ~/.pgpass,
// or the whole URL may come from TPUFLEET_STORE. Messages and logs show a URL without
// its password (RedactedPostgresUrl).
//
// Thread-safety: stateless functions.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "store/store.h"
#include "util/status.h"

namespace tpufleet::app {

/// The environment variable that names the store when no --store flag does.
inline constexpr const char* kStoreEnv = "TPUFLEET_STORE";

/// Which backend a location names, and what to open.
struct StoreLocation {
  bool postgres = false;
  std::string target;  // the SQLite file's path, or the PostgreSQL URL
  std::string shown;   // for messages: the path, or the URL without its password
};

/// The location from `flag` (--store's value, if given), else env's TPUFLEET_STORE, else
/// `state_dir`/state.db. InvalidArgument for a password in the flag's URL, or an empty
/// location.
Result<StoreLocation> FindStore(const std::optional<std::string>& flag,
                                const std::map<std::string, std::string>& env,
                                const std::string& state_dir);

/// Opens (creating or migrating) the store at `where`.
Result<std::unique_ptr<Store>> OpenStore(const StoreLocation& where);

}  // namespace tpufleet::app
