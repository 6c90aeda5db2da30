// What a node's workers must be sent for their accounts, kept in the store's events so
// that `up` reapplies them when, and only when, they changed (issue 16):
//   - "accounts-applied" (detail "users=N digest=D"): every worker of the node applied
//     the list whose AccountsDigest is D (written by up, serve's recreate, and the users
//     commands on READY nodes);
//   - "account-removal-pending" (detail "user=NAME purge=0|1"): `users remove` could not
//     reach the node (not READY); the next apply sends the removal, so the account is
//     locked and its processes stopped when the node is back (a STOPPED node keeps its
//     boot disk, and with it the account and whatever keys its owner added by hand).
// A removal is pending while it is newer than the node's last "accounts-applied" event
// and its name is not on the node's list again (re-added meanwhile).
//
// An up that finds a node's list unchanged and nothing pending opens no connection for
// accounts; a changed list (the spec's users, or the stored collaborators that select
// the node: UsersOfNode) has the node's workers apply it, nothing recreated.
//
// Thread-safety: as World's store.
#pragma once

#include <string>
#include <vector>

#include "api/agent.h"
#include "core/fleet_spec.h"
#include "store/store.h"
#include "util/clock.h"
#include "util/status.h"

namespace tpufleet {

inline constexpr const char* kAccountsAppliedEvent = "accounts-applied";
inline constexpr const char* kRemovalPendingEvent = "account-removal-pending";

/// The digest of a node's list as accounts.apply is sent it; never "".
std::string AccountsDigest(const std::vector<UserSpec>& users);

/// What the node's workers are to be sent now.
struct NodeAccounts {
  std::vector<UserSpec> users;               // the node's whole list (UsersOfNode)
  std::vector<api::AccountRemoval> remove;   // removals still pending, in the order made
  bool applied = false;  // the list is the one last applied and nothing is pending
};
Result<NodeAccounts> NodeAccountsToApply(Store& store, const FleetSpec& fleet,
                                         const NodeSpec& spec, const std::string& node);

/// Records that the node's workers all applied `users` (and so any pending removal).
Status RecordAccountsApplied(Store& store, const Clock& clock, const std::string& fleet,
                             const std::string& node, const std::vector<UserSpec>& users);

/// Records `remove` as pending on a node the users command could not reach.
Status RecordRemovalsPending(Store& store, const Clock& clock, const std::string& fleet,
                             const std::string& node,
                             const std::vector<api::AccountRemoval>& remove);

}  // namespace tpufleet
