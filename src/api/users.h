// What `tpufleet users` prints with --json (docs/users.md): the fleet's users, from its
// spec and added with `users add`, and how a change went on each node.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/fleet.h"

namespace tpufleet::api {

/// One user: {"fleet", "name", "source", "keys", "sudo", "nodes", "role"}. "source" is
/// "spec" (the fleet spec's users; "nodes" lists the spec's nodes it is on, "role" is
/// "") or "added" (`users add`; "nodes" are its selector words, [] for every node).
struct UserEntry {
  std::string fleet;
  std::string name;
  std::string source;
  std::vector<std::string> keys;
  bool sudo = false;
  std::vector<std::string> nodes;
  std::string role;
};

/// How a users change went on one node: {"node", "workers", "ok", "skipped"?,
/// "error"?}; "skipped" says why a node was not asked (it is then "ok").
struct UserNodeReport {
  std::string node;
  int workers = 0;
  std::string skipped;
  std::optional<Error> error;
};

/// `users add`, `set` and `remove`: {"user", "nodes"}.
struct UserChangeReport {
  UserEntry user;
  std::vector<UserNodeReport> nodes;
};

/// `users list`: {"users": [...]}.
std::string ToJson(const std::vector<UserEntry>& users);
std::string ToJson(const UserChangeReport& report);

}  // namespace tpufleet::api
