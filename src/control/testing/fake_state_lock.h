// FakeStateLock: the World's StateLocker (control/world.h) for serve's unit tests. It can
// be told to refuse, as the real STATE/lock does while a CLI command holds it, and says
// whether the lock it handed out is still held: the descriptor it hands out is the
// write end of a pipe whose read end it keeps, so "held" is "that end not yet closed".
//
// Thread-safety: one test thread.
#pragma once

#include <poll.h>
#include <unistd.h>

#include <optional>
#include <string>

#include "control/world.h"
#include "util/unique_fd.h"

namespace tpufleet::testing {

class FakeStateLock final : public StateLocker {
 public:
  Result<StateHold> TryLock() override {
    ++tries_;
    if (holder.has_value()) {
      return FailedPreconditionError(*holder + " is changing the fleet");
    }
    if (Held()) {
      return FailedPreconditionError("the lock is held already (by this test's serve)");
    }
    int fds[2];
    if (::pipe(fds) != 0) {
      return InternalError("pipe failed");
    }
    read_end_ = UniqueFd(fds[0]);
    ++takes_;
    return StateHold(std::make_shared<UniqueFd>(fds[1]));
  }

  /// Set: another process holds the lock ("`tpufleet up` (pid 123)"): TryLock refuses.
  std::optional<std::string> holder;

  /// Whether the last lock handed out is still held (its descriptor open).
  bool Held() const {
    if (read_end_.get() < 0) {
      return false;
    }
    pollfd p{read_end_.get(), POLLIN, 0};
    return ::poll(&p, 1, 0) == 0;  // the write end's close makes it readable (EOF)
  }
  int tries() const { return tries_; }
  int takes() const { return takes_; }

 private:
  UniqueFd read_end_;
  int tries_ = 0;
  int takes_ = 0;
};

}  // namespace tpufleet::testing
