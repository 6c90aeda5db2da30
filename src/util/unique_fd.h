// UniqueFd: owns one file descriptor and closes it when destroyed or reset, so every
// early return of a function that opens pipes or sockets closes what it opened.
// Movable, not copyable; -1 means "owns nothing".
//
// Thread-safety: none of its own; one owner at a time, like the descriptor itself.
#pragma once

#include <unistd.h>

namespace tpufleet {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }

  int get() const { return fd_; }
  /// Closes the descriptor now (if any); get() is -1 afterwards.
  void Reset() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

}  // namespace tpufleet
