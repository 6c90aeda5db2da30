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
// Both files are 0600, opened without following a symlink.
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

/// STATE/lock, taken per action by a process that does not hold it for its life (serve).
class StateDirLocker final : public StateLocker {
 public:
  StateDirLocker(std::string state_dir, std::string command)
      : state_dir_(std::move(state_dir)), command_(std::move(command)) {}
  Result<UniqueFd> TryLock() override { return LockStateDir(state_dir_, command_); }

 private:
  const std::string state_dir_;
  const std::string command_;
};

/// Takes STATE/serve.lock for this process's life (the descriptor's). FailedPrecondition
/// naming the serve that holds it.
Result<UniqueFd> LockServe(const std::string& state_dir);

}  // namespace tpufleet::app
