// Wire helpers of the emulator's Compute Engine API v1 (internal to src/emulator): its
// error envelope, its links and its timestamps, which differ from the Cloud TPU API's
// (wire.h).
//
// Compute answers an error with the older Google API envelope, an HTTP code and a list
// of {message, domain, reason}, and no gRPC status name:
//   {"error": {"code": 404, "message": "The resource 'projects/p/global/operations/x' was
//    not found", "errors": [{"message": "…", "domain": "global", "reason": "notFound"}]}}
// A failed operation carries its own form (Operation.error.errors[{code, message}],
// httpErrorStatusCode, httpErrorMessage): see compute_operations.h.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "emulator/http_types.h"
#include "emulator/wire.h"
#include "util/clock.h"

namespace tpufleet::emulator {

/// An error of a Compute Engine call: its HTTP status, its reason ("notFound",
/// "conditionNotMet", "invalid", "forbidden", "resourceInUseByAnotherResource", …) and
/// its message. Also what a Compute operation fails with (`op_code` is then the
/// upper-case code Operation.error.errors[].code carries, "RESOURCE_NOT_FOUND").
struct ComputeError {
  int http_status = 500;
  std::string reason;
  std::string message;
  std::string op_code;  // "" outside operations
};

/// 404 notFound "The resource '<path>' was not found" (path relative to the API root:
/// "projects/p/zones/z/disks/d"), as Compute words it.
ComputeError ComputeNotFound(std::string_view path);
/// 400 invalid with `message`.
ComputeError ComputeInvalid(std::string message);
/// Compute's envelope for `error` (see above).
HttpResponse ErrorResponse(const ComputeError& error);

/// The root every link of an answer starts with: "http://HOST/compute/v1/" for the Host
/// the client used (so a client following a selfLink comes back to the emulator, as it
/// would to Google's www.googleapis.com/compute/v1/), or the public root when the
/// request names no Host.
std::string ComputeRoot(const HttpRequest& req);

/// RFC 3339 with milliseconds and a numeric offset, as Compute writes every time
/// ("2026-01-01T00:00:00.000-00:00"; Google writes its local Pacific offset, the
/// emulator UTC).
std::string ComputeTimestamp(Clock::WallTime t);

}  // namespace tpufleet::emulator
