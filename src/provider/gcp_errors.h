// How the gcp-tpu provider turns the Cloud TPU API's errors into Status codes, by what
// control does next (provider.h). Internal to src/provider.
//
// Two shapes arrive (shared/reference/tpu-api.md §6): an HTTP answer with Google's JSON
// envelope {"error": {code: <HTTP>, message, status: "NOT_FOUND", details}}, classified
// by its `status` name, never by the HTTP code alone (a 409 may be ABORTED, not
// ALREADY_EXISTS); and the bare google.rpc.Status {code: <gRPC>, message, details} of a
// failed operation or queued resource. The same gRPC code means different things in the
// two: RESOURCE_EXHAUSTED answered at once is a quota (stop) or a rate limit (retry),
// while an operation that fails with it met a stockout (try another zone).
//
// Every message is the API's own text, so the user sees what Google said.
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace tpufleet {

/// Where a google.rpc.Status came from.
enum class RpcOrigin {
  kHttpAnswer,  // the HTTP answer of a call
  kOperation,   // the `error` of a done operation, or a FAILED queued resource's
};

/// The Status for gRPC code `code` with `message` and `details` (google.protobuf.Any
/// objects). Unavailable and Timeout mean "worth retrying".
Status ClassifyRpcStatus(int code, std::string_view message, const nlohmann::json& details,
                         RpcOrigin origin);

/// The Status for a non-2xx HTTP answer of the TPU API: from the envelope's `status`
/// name when there is one, else from the HTTP code (a proxy's page). Unavailable or
/// Timeout when a retry may succeed (429 rate limits, 5xx).
Status ClassifyHttpError(int http_status, std::string_view body);

/// The Status of the bare google.rpc.Status `error` of an operation or queued resource.
Status ClassifyOperationError(const nlohmann::json& error);

}  // namespace tpufleet
