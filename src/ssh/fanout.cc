#include "ssh/fanout.h"

namespace tpufleet {

std::string_view HostOutcomeName(HostOutcome outcome) {
  switch (outcome) {
    case HostOutcome::kExited: return "exited";
    case HostOutcome::kSignaled: return "signaled";
    case HostOutcome::kUnreachable: return "unreachable";
    case HostOutcome::kAuthFailed: return "auth-failed";
    case HostOutcome::kHostKeyMismatch: return "host-key-mismatch";
    case HostOutcome::kTimeout: return "timeout";
    case HostOutcome::kCancelled: return "cancelled";
  }
  return "unknown";
}

bool NeverConnected(const HostResult& result) {
  // The engine's messages for the stages before a channel opens (fanout_engine.cc).
  auto starts = [&](std::string_view prefix) {
    return result.message.compare(0, prefix.size(), prefix) == 0;
  };
  switch (result.outcome) {
    case HostOutcome::kUnreachable:
      return starts("connect: ") || starts("SSH handshake: ") || starts("SSH login: ");
    case HostOutcome::kTimeout:
      return starts("no SSH login within ");
    default:
      return false;
  }
}

}  // namespace tpufleet
