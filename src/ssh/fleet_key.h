// The fleet's own SSH key: one ed25519 key pair per user, made by ssh-keygen the first
// time it is needed, which tpufleet puts in every node's `ssh-keys` metadata and uses
// to log in. Nobody pastes keys by hand.
//
// FleetKeyStore is where a World (control/world.h) gets the key: FleetKeyFiles, the key
// on disk, built by src/app; tests hand in one that keeps a fixed key in memory
// (control/testing/test_world.h), so they need no ssh-keygen.
//
// Thread-safety: EnsureFleetKey may race with itself in two processes; the loser reads
// the winner's key (the key is written under a temporary name, then linked into place).
// FleetKeyFiles may be used from several threads (it keeps no state).
#pragma once

#include <string>
#include <utility>

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

/// The fleet key of a World.
class FleetKeyStore {
 public:
  FleetKeyStore() = default;
  FleetKeyStore(const FleetKeyStore&) = delete;
  FleetKeyStore& operator=(const FleetKeyStore&) = delete;
  virtual ~FleetKeyStore() = default;

  /// The key pair, made the first time it is asked for.
  virtual Result<FleetKey> Ensure() = 0;
  /// Where the private key is, made yet or not: what the SSH config's IdentityFile and
  /// the fan-out's logins name.
  virtual std::string PrivateKeyPath() const = 0;
};

/// The key pair in `dir` (STATE/ssh), as EnsureFleetKey keeps it.
class FleetKeyFiles final : public FleetKeyStore {
 public:
  explicit FleetKeyFiles(std::string dir) : dir_(std::move(dir)) {}
  Result<FleetKey> Ensure() override { return EnsureFleetKey(dir_); }
  std::string PrivateKeyPath() const override;

 private:
  const std::string dir_;
};

}  // namespace tpufleet
