#include "cli/interrupt_watch.h"

namespace tpufleet::cli {
namespace {

// Does nothing: its running at all is the event, and SA_RESETHAND records that.
void OnStopSignal(int) {}

bool StillOurs(int sig) {
  struct sigaction now {};
  return ::sigaction(sig, nullptr, &now) == 0 && now.sa_handler == OnStopSignal;
}

}  // namespace

InterruptWatch::InterruptWatch(const std::atomic<bool>* flag) : flag_(flag) {
  if (flag_ != nullptr) {
    return;
  }
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sa.sa_flags = SA_RESETHAND;  // and no SA_RESTART: a poll in progress wakes
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &old_int_);
  ::sigaction(SIGTERM, &sa, &old_term_);
}

InterruptWatch::~InterruptWatch() {
  if (flag_ != nullptr) {
    return;
  }
  ::sigaction(SIGINT, &old_int_, nullptr);
  ::sigaction(SIGTERM, &old_term_, nullptr);
}

bool InterruptWatch::Interrupted() const {
  if (flag_ != nullptr) {
    return flag_->load();
  }
  return !StillOurs(SIGINT) || !StillOurs(SIGTERM);
}

}  // namespace tpufleet::cli
