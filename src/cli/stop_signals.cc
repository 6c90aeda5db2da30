#include "cli/stop_signals.h"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>

namespace tpufleet::cli {

StopSignals::StopSignals() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGINT);
  sigaddset(&set_, SIGTERM);
  sigaddset(&set_, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set_, &old_);
  fd_ = UniqueFd(::signalfd(-1, &set_, SFD_CLOEXEC | SFD_NONBLOCK));
}

StopSignals::~StopSignals() {
  timespec zero{};
  while (sigtimedwait(&set_, nullptr, &zero) > 0) {
  }
  pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

int StopSignals::Take() {
  signalfd_siginfo info{};
  ssize_t n = 0;
  do {
    n = ::read(fd_.get(), &info, sizeof info);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(sizeof info) ? static_cast<int>(info.ssi_signo) : 0;
}

}  // namespace tpufleet::cli
