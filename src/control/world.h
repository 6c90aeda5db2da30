// World: everything `control` acts on, handed in by src/app (which alone builds real
// implementations, app/fleet_world.cc) or by tests (fakes, control/testing/test_world.h).
// control never constructs a provider, a store, an SSH runner, the fleet key, the SSH
// files or a forward itself: behind these seams a test keeps everything in memory and
// needs no ssh-keygen, no ssh and no HOME of its own.
//
// Thread-safety: the members must be safe to use from several threads (down deletes
// nodes concurrently; up and FinishLeftovers drive theirs from one loop in one thread).
#pragma once

#include <memory>
#include <string>

#include "control/port_forward.h"
#include "provider/provider.h"
#include "ssh/fanout.h"
#include "ssh/fleet_key.h"
#include "ssh/runner.h"
#include "ssh/ssh_files.h"
#include "store/store.h"
#include "util/clock.h"
#include "util/status.h"
#include "util/unique_fd.h"

namespace tpufleet {

/// Finds the provider for a spec (up, import) or for a stored node (status, down).
class ProviderSource {
 public:
  ProviderSource() = default;
  ProviderSource(const ProviderSource&) = delete;
  ProviderSource& operator=(const ProviderSource&) = delete;
  virtual ~ProviderSource() = default;

  virtual Result<CloudProvider*> ForFleet(const FleetSpec& fleet) = 0;
  /// `provider` and `project` as stored in NodeRecord; `record` is the node itself,
  /// for providers that need more (ssh-hosts: its addresses).
  virtual Result<CloudProvider*> ForRecord(const NodeRecord& record) = 0;
};

/// Where tpufleet keeps its files, as the commands name them (the files themselves are
/// World::keys' and World::ssh_files').
struct ControlPaths {
  std::string ssh_dir;      // STATE/ssh: the fleet key, config and known_hosts
  std::string state_dir{};  // STATE itself, which `ssh-proxy --state-dir` is given
  /// The absolute path of tpufleet, for the ProxyCommand of the SSH config's Host
  /// blocks (ssh_sync.h); "": none, the blocks connect to the stored address.
  std::string proxy_program{};
  /// The node agent `up` installs on every worker and `doctor` compares with
  /// (control/agent_install.h): tpufleet-agent next to tpufleet, or $TPUFLEET_AGENT_BINARY.
  std::string agent_binary{};
};

/// STATE/lock, what `up`, `down` and `import` hold for their whole run; `serve` (which
/// holds STATE/serve.lock for its life) takes it only around each action that changes
/// the fleet (a delete; a recover until its node is READY and set up), so that a CLI
/// command and serve never make a node twice: both go through this lock and the same
/// records. The real one (app/fleet_world.cc) writes "PID COMMAND" into the file after
/// taking it, so that either side's refusal names the other.
/// A lock while it is held (a lock file's descriptor, a database session's lock): let
/// go when the last copy goes.
using StateHold = std::shared_ptr<void>;

class StateLocker {
 public:
  StateLocker() = default;
  StateLocker(const StateLocker&) = delete;
  StateLocker& operator=(const StateLocker&) = delete;
  virtual ~StateLocker() = default;

  /// Takes the lock without waiting; it is let go when the last copy of the hold goes.
  /// FailedPrecondition naming the holder ("`tpufleet up` (pid 123) is changing the
  /// fleet") when another process holds it.
  virtual Result<StateHold> TryLock() = 0;
};

struct World {
  Store& store;
  Clock& clock;
  ProviderSource& providers;
  SshRunner& ssh;  // up's login check on ssh-hosts machines (the user's keys)
  Fanout& fanout;  // exec and cp: many workers at once
  /// up's login check and setup: the fan-out engine in this process, on up's event loop
  /// (Open), so that `up` starts no process (no ssh per worker, no holder left behind).
  Fanout& local_fanout;
  FleetKeyStore& keys;      // the fleet key: up and import put it on nodes, exec logs in
  SshFileStore& ssh_files;  // STATE/ssh/config, known_hosts, the ~/.ssh/config Include
  Forwarder& forwarder;     // `tpufleet forward`'s ssh -N -L
  ControlPaths paths;
  /// The user tpufleet logs in as on the nodes it creates: the local user's name when
  /// it is a valid, non-system login, else "tpufleet" (see DefaultLogin).
  std::string login;
  /// The state lock, for a caller that takes it per action (serve); nullptr: the caller
  /// holds it already for its whole run (the CLI commands).
  StateLocker* state_lock = nullptr;
};

/// Whom tpufleet logs in as on the nodes it creates: `sudo_user` ($SUDO_USER) when
/// tpufleet runs as `root` (sudo, as the emulator needs) and CheckUserName accepts it,
/// else `user` ($USER) when CheckUserName accepts it, else "tpufleet": root and system
/// accounts are never put in a node's ssh-keys.
std::string DefaultLogin(const std::string& user, const std::string& sudo_user = "",
                         bool root = false);

}  // namespace tpufleet
