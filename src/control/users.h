// Users: the collaborators an admin adds without editing the fleet spec (`tpufleet users
// add / set / list / remove`, docs/users.md), and the one answer to "who gets an account
// on node N" that `up`, serve's recreate and the users commands all use.
//
// A collaborator is a UserRecord in the store (core/node_record.h): a name, keys, sudo
// or not, the nodes it is on (selector words of control/targets.h; none: every node of
// the fleet) and a role kept for the team server. The accounts are made by each
// worker's agent (accounts.apply, docs/agent-protocol.md) with the node's whole list:
// the spec's users, then the stored ones that select the node. `users add` and `set`
// store the change, then apply the node's list at once on every worker of the fleet's
// READY nodes that the user is (or was) on; nodes not READY get it when `up` or serve
// brings them back, since both make the accounts from UsersOfNode. `users remove`
// forgets the user, then has the agents of those nodes take the account away (its
// processes and jobs stopped, keys and sudo gone, the account locked; with purge, the
// account and home removed); on a node not READY the removal is kept pending and sent
// by the next `up` that reaches it (control/node_accounts.h, which also lets `up` skip
// a node whose list is the one it last applied).
//
// Bad input changes nothing: a name CheckUserName refuses (root and system accounts), a
// name the spec already has (its users are the spec's to change), tpufleet's own login
// on the nodes, a key CheckSshPublicKey refuses, a malformed selector or an unknown role
// is InvalidArgument before the store is touched. A node whose agents fail is that
// node's result; the store keeps the change, and the next `up` or users command applies
// it again.
//
// Thread-safety: as World's members; progress runs on the calling thread.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "control/world.h"
#include "core/fleet_spec.h"
#include "core/node_record.h"
#include "util/status.h"

namespace tpufleet {

/// How long one worker may take to apply a node's accounts: useradd and visudo per user,
/// and on a removal the account's processes' grace: seconds; a minute is a stuck worker.
inline constexpr std::chrono::minutes kUsersApplyTimeout{2};

/// Everyone who gets an account on node `node` (an id of `spec`, the fleet's node
/// entry): the spec's users (UsersOn), then the stored collaborators of the fleet whose
/// `nodes` select it (by its id and the spec's labels), in name order. A stored user
/// with a spec user's name is left out (the spec decides).
std::vector<UserSpec> UsersOfNode(const FleetSpec& fleet, const NodeSpec& spec,
                                  const std::string& node, const std::vector<UserRecord>& stored);
/// The same, reading the fleet's stored users.
Result<std::vector<UserSpec>> UsersOfNode(Store& store, const FleetSpec& fleet,
                                          const NodeSpec& spec, const std::string& node);

/// What `users add` and `users set` ask; unset fields keep the stored value (`add`: the
/// defaults: no sudo, every node, member).
struct UserChange {
  std::string name;
  std::optional<std::vector<std::string>> keys;   // OpenSSH public key lines
  std::optional<bool> sudo;
  std::optional<std::vector<std::string>> nodes;  // selector words; empty: every node
  std::optional<std::string> role;
};

/// How the change went on one node.
struct UserNodeResult {
  std::string node;
  int workers = 0;  // the workers asked
  /// OK when every worker applied it; else the first failure, naming the worker. A node
  /// not READY is skipped, with `skipped` saying why.
  Status status;
  std::string skipped;  // "PREEMPTED: applied when up or serve brings it back", or ""
};

/// Called as each node starts ("applying on 4 workers") and ends.
using UserProgress = std::function<void(const UserNodeResult& node, bool done)>;

struct UsersOutcome {
  UserRecord user;                    // as stored now (remove: as it was)
  std::vector<UserNodeResult> nodes;  // in node order
  bool ok() const;                    // every node asked applied it
};

/// `users add`: stores a new collaborator of `fleet` and applies it. AlreadyExists when
/// the fleet has one by that name (`users set` changes it); `change.keys` is required.
Result<UsersOutcome> AddUser(World& world, const FleetSpec& fleet, const UserChange& change,
                             const UserProgress& progress = {});
/// `users set`: changes a stored collaborator and applies it (also on the nodes it
/// leaves, which take its keys away). NotFound when there is none by that name.
Result<UsersOutcome> SetUser(World& world, const FleetSpec& fleet, const UserChange& change,
                             const UserProgress& progress = {});
/// `users remove`: forgets the collaborator and has its nodes' agents take the account
/// away (with `purge`, the account and home too), and forgets their team-server tokens
/// once they are on no fleet. NotFound when none is stored, except
/// with purge, which then purges what an earlier remove kept on every READY node.
Result<UsersOutcome> RemoveUser(World& world, const FleetSpec& fleet, const std::string& name,
                                bool purge, const UserProgress& progress = {});

}  // namespace tpufleet
