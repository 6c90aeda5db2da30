// The fleet's own SSH key: one ed25519 key pair per user, made by ssh-keygen the first
// time it is needed, which tpufleet puts in every node's `ssh-keys` metadata and uses
// to log in. Nobody pastes keys by hand.
//
// Thread-safety: EnsureFleetKey may race with itself in two processes; the loser reads
// the winner's key (the key is written under a temporary name, then linked into place).
#pragma once

#include <string>

#include "util/status.h"

namespace tpufleet {

struct FleetKey {
  std::string private_key_path;  // DIR/id_ed25519, mode 0600
  std::string public_key;        // "ssh-ed25519 AAAA… tpufleet" (one line, no newline)
};

/// The key pair in `dir` (created 0700 if missing), generated with `ssh-keygen -t ed25519
/// -N ''` (spawned without a shell) when absent. FailedPrecondition when ssh-keygen is
/// missing. `dir` must be the effective user's and not writable by others
/// (MakePrivateDirs); a key file that is not a regular file, belongs to another user or
/// has wider permissions than 0600 is refused (FailedPrecondition), as OpenSSH would.
Result<FleetKey> EnsureFleetKey(const std::string& dir);

}  // namespace tpufleet
