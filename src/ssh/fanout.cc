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

}  // namespace tpufleet
