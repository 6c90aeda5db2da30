#include "util/status.h"

namespace tpufleet {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kNotFound: return "not_found";
    case StatusCode::kInvalidArgument: return "invalid_argument";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kTimeout: return "timeout";
    case StatusCode::kPermissionDenied: return "permission_denied";
    case StatusCode::kFailedPrecondition: return "failed_precondition";
    case StatusCode::kResourceExhausted: return "resource_exhausted";
    case StatusCode::kAlreadyExists: return "already_exists";
    case StatusCode::kInternal: return "internal";
  }
  return "unknown";
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) {
    return *this;
  }
  return Status(code_, std::string(context) + ": " + message_);
}

std::string Status::ToString() const {
  if (ok()) {
    return "ok";
  }
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

}  // namespace tpufleet
