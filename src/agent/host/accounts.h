// accounts.apply: the Unix accounts the fleet spec names, on this worker.
//
// For each user {name, keys, sudo} of the list (the whole list the spec gives for this
// node; a user missing from it is no longer one of the spec's):
//   - a missing account is created: `useradd -m -d /home/NAME -s /bin/bash -p '*' -l`
//     (no password, yet not "locked" for an sshd without PAM; sudo asks for none), run
//     with an argv array, never a shell. The agent records the accounts it made (name
//     and uid, kMadeAccountsFile in its state dir, 0600).
//   - an account the agent made gets exactly `keys` in the tpufleet block of its
//     ~/.ssh/authorized_keys (authorized_keys.h); the user's own lines stay.
//   - an account the agent did not make (Google's guest agent made it from ssh-keys, an
//     admin did, it is a system account) keeps its keys and files as they are: giving
//     keys to an account whose home may be anywhere is how a spec could hand out root's
//     files. Only its sudo rule is set (action "sudo_only"). An account the agent made
//     whose uid or home has changed since counts as not made by it.
//   - every user gets its sudo rule (sudo_rules.h): `sudo: false` is no sudo, whatever
//     group the guest agent put it in.
// An account the agent made that the list no longer names keeps its account and files,
// loses its tpufleet keys (action "removed", when it had some) and gets `!ALL`.
// Names must pass core's CheckUserName and keys CheckSshPublicKey; a user that does not
// is refused alone, and nothing is done for it.
//
// Thread-safety: none; run from the agent's loop thread (it forks, see
// authorized_keys.h). REQUIRES: root.
#pragma once

#include <string>
#include <vector>

#include "agent/host/host_paths.h"

namespace tpufleet::agent::host {

/// Below HostPaths::state: "<name> <uid>" a line.
inline constexpr const char* kMadeAccountsFile = "accounts_made";

struct AccountSpec {
  std::string name;
  std::vector<std::string> keys;  // OpenSSH public key lines
  bool sudo = false;
};

struct AccountResult {
  std::string name;
  /// "created", "updated" (keys changed), "unchanged", "sudo_only" (not made by the
  /// agent: see above), "removed" (no longer listed: keys taken away), "refused".
  std::string action;
  std::string error;   // what failed; "" when it all went through
  std::string detail;  // for sudo_only: why the keys were left alone
};

/// The programs the apply runs; "" finds them in the usual sbin and bin directories.
struct AccountTools {
  std::string useradd;
  std::string visudo;  // none found: the sudoers file is written unchecked (no sudo)
};

/// Applies `users` (see above); a result per listed user, then one per removed one.
std::vector<AccountResult> ApplyAccounts(const HostPaths& paths,
                                         const std::vector<AccountSpec>& users,
                                         const AccountTools& tools = {});

}  // namespace tpufleet::agent::host
