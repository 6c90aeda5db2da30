// GuestAgent: the part of a TPU VM's guest environment that turns the `ssh-keys`
// metadata into Unix users. It runs inside one worker (in its init process, with the
// worker's /etc and /home mounted) and does what Google's guest agent does:
//   - a user listed in ssh-keys is created if missing (useradd -m, home /home/<name>,
//     shell /bin/bash, password field "*": no password, yet not "locked" for sshd
//     without PAM), and joins the group google-sudoers, which
//     /etc/sudoers.d/google_sudoers lets run anything with sudo and no password (only
//     when sudo is installed);
//   - its ~/.ssh/authorized_keys gets exactly its listed keys, each after a
//     "# Added by Google" line; lines the user added themselves are kept;
//   - a user no longer listed keeps its account and files but loses those keys and its
//     google-sudoers membership, so it can no longer log in with them.
//
// It manages only the accounts it created, recorded (name and uid) in
// kCreatedUsersFile on the worker's private /etc. A name in ssh-keys that exists but is
// not in that record (root, daemons, nobody, an account someone added by hand) is
// refused and the refusal logged: giving it keys would hand out an account whose home
// may be anywhere, even outside the worker's private file system. A recorded user whose
// uid or home has changed since is refused too.
//
// At its first Sync on a new disk, the worker's /etc (a copy-on-write view of the
// machine's) forgets the machine's login accounts and password hashes
// (ForgetMachineLogins): a TPU VM starts without its owner's machine accounts, a
// machine user of the same name as a tpufleet login must not block its creation, and
// the worker's root must not read the machine's hashes.
//
// authorized_keys is written by a child process running as the user, opening every
// component below /home with O_NOFOLLOW and checking the home is owned by the user, so
// a symlink the user planted can only ever reach files that user could write anyway.
// Commands run through execve with argv arrays; names were validated by ParseSshKeys.
//
// Thread-safety: none; the init's single thread runs it.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "emulator/hosts/ssh_keys.h"
#include "util/status.h"

namespace tpufleet::emulator::hosts {

inline constexpr const char* kSudoersGroup = "google-sudoers";
inline constexpr const char* kSudoersFile = "/etc/sudoers.d/google_sudoers";
/// The accounts the agent created on this worker: "<name> <uid>" a line.
inline constexpr const char* kCreatedUsersFile = "/etc/tpufleet/created_users";
/// Present once this worker's /etc has forgotten the machine's login accounts.
inline constexpr const char* kMachineLoginsForgotten = "/etc/tpufleet/machine-logins-forgotten";
/// Where the agent puts a user's home: /home is the worker's own (its disk).
inline constexpr const char* kHomeParent = "/home";
/// The first uid of a normal account (Debian's UID_MIN): lower ones are system accounts.
inline constexpr unsigned kFirstUserUid = 1000;
/// nobody and nogroup (the kernel's overflow id): a system account despite its number.
inline constexpr unsigned kOverflowId = 65534;

/// The ssh-keys text the agent applies, from the instance's and the project's metadata
/// attributes, combined as Google's guest agent combines them: the instance's `ssh-keys`
/// and legacy `sshKeys`, then the project's `ssh-keys` and `sshKeys` unless the instance
/// blocks project keys, with `block-project-ssh-keys` true (as Go's strconv.ParseBool
/// reads it: 1, t, T, TRUE, true, True) or by having a legacy `sshKeys` at all.
/// `enable-oslogin` is not looked at: the emulator has no OS Login.
std::string MetadataSshKeys(const std::map<std::string, std::string>& instance,
                            const std::map<std::string, std::string>& project);

/// The account databases of an /etc, as text.
struct AccountFiles {
  std::string passwd;
  std::string shadow;
  std::string group;
  std::string gshadow;
};

/// `files` without the login accounts of the machine: every user with a uid from
/// kFirstUserUid up (but kOverflowId) that is not in `keep`, its shadow entry, its
/// user-private group (same name, gid from kFirstUserUid up), and its name in the member
/// and admin lists of the other groups. The password hashes left (root's, say) become
/// "*", or "!" when locked, but those of `keep`. Every other line is kept as it was.
AccountFiles WithoutMachineLogins(const AccountFiles& files, const std::set<std::string>& keep);

class GuestAgent {
 public:
  GuestAgent() = default;
  GuestAgent(const GuestAgent&) = delete;
  GuestAgent& operator=(const GuestAgent&) = delete;

  /// Makes the users match `entries`. A failure or refusal for one user is logged and
  /// the others still applied; the first such error is returned.
  Status Sync(const std::vector<SshKeyEntry>& entries);

 private:
  /// On a new disk: rewrites the account files of /etc without the machine's login
  /// accounts (WithoutMachineLogins), then writes kMachineLoginsForgotten.
  Status ForgetMachineLogins();
  Status EnsureSudoersGroup();
  bool logins_forgotten_ = false;
  bool group_ready_ = false;
};

}  // namespace tpufleet::emulator::hosts
