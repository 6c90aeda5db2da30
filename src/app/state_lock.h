// The two locks of a state directory, as files whose holder the kernel drops when it
// dies (flock(2): kill -9 included), each holding "PID COMMAND" once taken, so that a
// refusal names who holds it:
//   STATE/lock        what up, down and import hold for their whole run, and what
//                     `tpufleet serve` takes around each action that changes the fleet
//                     (StateDirLocker, control/world.h's StateLocker):
//                     "`tpufleet serve` (pid 12) is changing the fleet (it holds
//                     STATE/lock); wait for it to finish"
//   STATE/serve.lock  held by `tpufleet serve` for its life: one reconciler per state.
//                     "tpufleet serve (pid 12) is already keeping this state
//                     (STATE/serve.lock)"
// Both files are 0600, opened without following a symlink. When the store is on
// PostgreSQL, machines that share it do not share STATE/lock: the state lock is then
// also the store's (store/postgres_lock.h), taken after the file.
//
// Thread-safety: TryLock may be called from any thread; each call opens the file anew.
#pragma once

#include <string>

#include "control/world.h"
#include "util/status.h"
#include "util/unique_fd.h"

namespace tpufleet::app {

/// Takes STATE/lock for `command` ("up", "serve"): the lock is held while the
/// descriptor is open. FailedPrecondition naming the holder when another process (or
/// another descriptor of this one) holds it.
Result<UniqueFd> LockStateDir(const std::string& state_dir, const std::string& command);

/// STATE/lock and, when `postgres_url` is not empty, the PostgreSQL store's state lock,
/// both held while the hold lives. FailedPrecondition naming the holder of either.
Result<StateHold> LockState(const std::string& state_dir, const std::string& command,
                            const std::string& postgres_url);

/// LockState per action, for a process that does not hold it for its life (serve).
class StateDirLocker final : public StateLocker {
 public:
  StateDirLocker(std::string state_dir, std::string command, std::string postgres_url)
      : state_dir_(std::move(state_dir)),
        command_(std::move(command)),
        postgres_url_(std::move(postgres_url)) {}
  Result<StateHold> TryLock() override { return LockState(state_dir_, command_, postgres_url_); }

 private:
  const std::string state_dir_;
  const std::string command_;
  const std::string postgres_url_;  // "" on SQLite
};

/// Takes STATE/serve.lock for this process's life (the descriptor's). FailedPrecondition
/// naming the serve that holds it.
Result<UniqueFd> LockServe(const std::string& state_dir);

}  // namespace tpufleet::app
