// GuestAgent: the part of a TPU VM's guest environment that turns the `ssh-keys`
// metadata into Unix users. It runs inside one worker (in its init process, with the
// worker's /etc and /home mounted) and does what Google's guest agent does:
//   - a user listed in ssh-keys is created if missing (useradd -m, shell /bin/bash,
//     password field "*": no password, yet not "locked" for sshd without PAM), gets a
//     home, and joins the group google-sudoers, which /etc/sudoers.d/google_sudoers
//     lets run anything with sudo and no password (only when sudo is installed);
//   - its ~/.ssh/authorized_keys gets exactly its listed keys, each after a
//     "# Added by Google" line; lines the user added themselves are kept;
//   - a user no longer listed keeps its account and files but loses those keys and its
//     google-sudoers membership, so it can no longer log in with them.
// Users the agent has managed are remembered in /etc/tpufleet/google_users. Accounts
// below uid 1000 (root, daemons) are never given keys. authorized_keys is written by a
// child process running as the user, so a symlink the user planted in their home can
// only ever reach files that user could write anyway. Commands run through execve with
// argv arrays; names were validated by ParseSshKeys.
//
// Thread-safety: none; the init's single thread runs it.
#pragma once

#include <vector>

#include "emulator/hosts/ssh_keys.h"
#include "util/status.h"

namespace tpufleet::emulator::hosts {

inline constexpr const char* kSudoersGroup = "google-sudoers";
inline constexpr const char* kSudoersFile = "/etc/sudoers.d/google_sudoers";
inline constexpr const char* kManagedUsersFile = "/etc/tpufleet/google_users";
/// The first uid of a normal account (Debian's UID_MIN): lower ones are system accounts.
inline constexpr unsigned kFirstUserUid = 1000;

class GuestAgent {
 public:
  GuestAgent() = default;
  GuestAgent(const GuestAgent&) = delete;
  GuestAgent& operator=(const GuestAgent&) = delete;

  /// Makes the users match `entries`. A failure for one user is logged and the others
  /// still applied; the first such error is returned.
  Status Sync(const std::vector<SshKeyEntry>& entries);

 private:
  Status EnsureSudoersGroup();
  bool group_ready_ = false;
};

}  // namespace tpufleet::emulator::hosts
