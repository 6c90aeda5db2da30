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
//
// A removal {name, purge} (`tpufleet users remove`) goes further, for an account the
// agent made and only for one: its tpufleet keys go, it gets `!ALL`, it is locked and
// expired (`usermod -L -e 1`: sshd refuses it then, with or without PAM, whatever keys
// its own lines of authorized_keys hold), and then every process of its uid is stopped
// (user_processes.h: SIGTERM, SIGKILL after the grace); action "revoked". With purge the
// account and its home go too (`userdel -r`), action "purged". Just before its processes
// are stopped, AccountTools::stop_jobs lets the caller cancel the account's jobs through
// its job table, so that they are recorded as cancelled. An
// account the agent did not make (root, a system account, tpufleet's own login, one the
// guest agent made), uid 0, or a name also listed in `users` is refused and untouched;
// a name with no account here is "revoked" or "purged" with nothing to do. An account
// listed again later is unlocked (`usermod -U -e ''`) and gets its keys back.
// Names must pass core's CheckUserName and keys CheckSshPublicKey; a user that does not
// is refused alone, and nothing is done for it.
//
// Thread-safety: none; run from the agent's loop thread (it forks, see
// authorized_keys.h). REQUIRES: root.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "agent/host/host_paths.h"
#include "agent/host/user_processes.h"

namespace tpufleet::agent::host {

/// Below HostPaths::state: "<name> <uid>" a line.
inline constexpr const char* kMadeAccountsFile = "accounts_made";

struct AccountSpec {
  std::string name;
  std::vector<std::string> keys;  // OpenSSH public key lines
  bool sudo = false;
};

/// An account taken away (above).
struct AccountRemoval {
  std::string name;
  bool purge = false;  // the account and its home go too
};

struct AccountResult {
  std::string name;
  /// "created", "updated" (keys changed), "unchanged", "sudo_only" (not made by the
  /// agent: see above), "removed" (no longer listed: keys taken away), "revoked" and
  /// "purged" (a removal: see above), "refused".
  std::string action;
  std::string error;   // what failed; "" when it all went through
  std::string detail;  // for sudo_only: why the keys were left alone
};

/// The programs the apply runs; "" finds them in the usual sbin and bin directories.
struct AccountTools {
  std::string useradd;
  std::string visudo;  // none found: the sudoers file is written unchecked (no sudo)
  std::string usermod;
  std::string userdel;
  std::chrono::milliseconds stop_grace = kStopGrace;  // SIGTERM to SIGKILL, on a removal
  /// Called for each account a removal takes away, once it can no longer log in or sudo
  /// and before its processes are stopped: the agent cancels its jobs there. Returns
  /// what failed, "" when nothing did. Empty: nothing to do.
  std::function<std::string(const std::string& name)> stop_jobs;
};

/// Applies `users` and `remove` (see above); a result per listed user, then one per
/// account no longer listed, then one per removal.
std::vector<AccountResult> ApplyAccounts(const HostPaths& paths,
                                         const std::vector<AccountSpec>& users,
                                         const std::vector<AccountRemoval>& remove = {},
                                         const AccountTools& tools = {});

}  // namespace tpufleet::agent::host
