// Who may use sudo on this worker: /etc/sudoers.d/zz_tpufleet, one rule per user of the
// spec, so that `sudo: false` means no sudo.
//
// Google's guest agent adds every ssh-keys user to the group google-sudoers, which
// /etc/sudoers.d/google_sudoers lets run anything without a password (and the
// emulator's guest agent does the same). sudo applies the LAST rule that matches a user
// and command, and reads the files of /etc/sudoers.d in lexical order, so a rule in
// zz_tpufleet, read after google_sudoers (and after cloud-init's 90-cloud-init-users),
// decides:
//
//   alice ALL=(ALL:ALL) NOPASSWD:ALL   # sudo: true: anything, no password (no account
//                                      # the agent makes has a password)
//   bob ALL=(ALL:ALL) !ALL             # sudo: false: nothing, whatever a group grants
//
// The file is root's, mode 0440 (sudo ignores a file others may write), checked with
// `visudo -cf` before it replaces the old one (a broken sudoers file would lock
// everyone out of sudo), and moved in with rename(2). sudo skips names containing '.',
// so the temporary file beside it is never read half-written.
//
// Thread-safety: stateless.
#pragma once

#include <string>
#include <vector>

#include "util/status.h"

namespace tpufleet::agent::host {

/// Below sudoers.d: after every file Google's images and cloud-init put there.
inline constexpr const char* kSudoersFileName = "zz_tpufleet";

struct SudoRule {
  std::string user;
  bool sudo = false;
};

/// The file's text: a header saying who writes it and why, then a rule a user.
/// REQUIRES: every user name passed CheckUserName (no sudoers syntax in it).
std::string SudoersText(const std::vector<SudoRule>& rules);

/// Writes `text` to `sudoers_d`/zz_tpufleet (created 0755 when missing) when it differs,
/// after `visudo -cf` accepts it; `visudo` is the program's path, "" to skip the check
/// (no sudo installed). FailedPrecondition with visudo's words when it refuses.
Status InstallSudoers(const std::string& sudoers_d, const std::string& text,
                      const std::string& visudo, const std::string& scratch_dir);

}  // namespace tpufleet::agent::host
