// The keys the agent gives an account: a marked block in ~/.ssh/authorized_keys that
// holds exactly the listed keys, with every line the user wrote outside it kept as it
// was, so `tpufleet users` changes only what it owns:
//
//   # BEGIN tpufleet: managed by tpufleet-agent; lines in this block are replaced
//   ssh-ed25519 AAAA… alice@laptop
//   # END tpufleet
//
// The file is written by a child process running as the user (setgroups, setgid,
// setuid) that opens every component from the user's home down with O_NOFOLLOW and
// checks the home belongs to the user, so a symlink the user planted (~/.ssh ->
// /etc, say) can reach only files that user could write anyway; the new content goes
// to a temporary file (WriteFileAtomic: O_EXCL|O_NOFOLLOW, 0600) in the ~/.ssh it
// opened, renamed over the old one. The house's rules of the emulator's guest agent
// (src/emulator/hosts/guest_agent.h), which does the same for Google's
// "# Added by Google" lines.
//
// Thread-safety: MergeAuthorizedKeys is pure. SetAuthorizedKeys forks; the child
// allocates (glibc's fork makes malloc safe in the child), so call it from a process
// whose other threads hold no locks the child needs (the agent's single loop thread).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "util/status.h"

namespace tpufleet::agent::host {

inline constexpr const char* kKeysBlockBegin =
    "# BEGIN tpufleet: managed by tpufleet-agent; lines in this block are replaced";
inline constexpr const char* kKeysBlockEnd = "# END tpufleet";
/// The largest authorized_keys read: thousands of keys fit; more is not a key file.
inline constexpr size_t kMaxAuthorizedKeysBytes = 1u << 20;

/// `old` with its tpufleet block (every one, if someone copied it) replaced by one
/// holding `keys`, at the end; no block when `keys` is empty. A BEGIN line without an
/// END is dropped alone: the lines after it are the user's. Other lines are kept.
std::string MergeAuthorizedKeys(const std::string& old, const std::vector<std::string>& keys);

/// The account whose keys are set.
struct KeyOwner {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;  // the home directory's path as this process sees it
};

/// Puts exactly `keys` in the tpufleet block of `owner`'s ~/.ssh/authorized_keys,
/// creating ~/.ssh (0700) and the file (0600) when missing. True when the file changed.
/// Internal naming the step when the home is not a directory the user owns, or a
/// component is a symlink, or a write fails.
/// REQUIRES: root (the child drops to the user).
Result<bool> SetAuthorizedKeys(const KeyOwner& owner, const std::vector<std::string>& keys);

}  // namespace tpufleet::agent::host
