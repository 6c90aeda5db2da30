// Wire helpers of the emulator's Cloud TPU API (internal to src/emulator): gRPC codes
// and their HTTP mapping, Google's JSON error envelope, proto3-JSON durations, enum values
// that arrive as names or numbers, and opaque page tokens. Timestamps: util/timestamp.h.
//
// Reference: shared/reference/tpu-api.md §1 (proto3 JSON), §5 (operations), §6 (errors).
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "emulator/http_types.h"
#include "util/clock.h"
#include "util/status.h"
#include "util/timestamp.h"  // FormatTimestamp, ParseTimestamp

namespace tpufleet::emulator {

using Json = nlohmann::json;

/// google.rpc.Code values the emulator answers with.
enum class RpcCode {
  kOk = 0,
  kCancelled = 1,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kUnauthenticated = 16,
};

/// The HTTP status Google maps a code to (google/rpc/code.proto "HTTP Mapping").
int HttpStatusOf(RpcCode code);
/// "NOT_FOUND", as in the envelope's `status` field.
std::string_view RpcCodeName(RpcCode code);
/// The code for an HTTP status, for fault storms (429 → RESOURCE_EXHAUSTED …).
RpcCode RpcCodeOfHttp(int http_status);

/// A google.rpc.Status as a value: the error of an API call or of an operation.
struct RpcError {
  RpcCode code = RpcCode::kInternal;
  std::string message;
  Json details = Json::array();  // google.protobuf.Any objects, each with "@type"
};

/// `{"@type": "…ResourceInfo", "resourceName": name}` (tpu-api.md §6).
Json ResourceInfoDetail(std::string_view resource_name);
/// `{"@type": "…ErrorInfo", "reason", "domain", "metadata"}`.
Json ErrorInfoDetail(std::string_view reason, std::string_view domain,
                     const std::map<std::string, std::string>& metadata);

RpcError NotFound(std::string_view resource_name);       // 404 "Resource '…' was not found"
RpcError AlreadyExists(std::string_view resource_name);  // 409 "Resource '…' already exists"
RpcError InvalidArgument(std::string message);

/// Google's JSON error envelope: {"error": {code (HTTP), message, status, details}}.
HttpResponse ErrorResponse(const RpcError& error);
/// The bare google.rpc.Status inside an Operation: {code (gRPC), message, details}.
Json OperationErrorJson(const RpcError& error);
HttpResponse JsonResponse(const Json& body, int status = 200);
/// The same for a document already written (an api/ type's ToJson): `text` and "\n".
HttpResponse JsonTextResponse(std::string text, int status = 200);

/// `t + d`, or WallTime::max()/min() where that would overflow.
Clock::WallTime AddSaturating(Clock::WallTime t, std::chrono::nanoseconds d);

/// The bound of google.protobuf.Duration: ±10,000 years in seconds.
inline constexpr long long kMaxProtoDurationSeconds = 315'576'000'000;
/// Parses a proto3-JSON Duration: "3600s", "1.5s", "0.000001s", "-2s": an optional
/// '-', seconds within ±kMaxProtoDurationSeconds, an optional fraction of 1 to 9
/// digits, and "s". One past what nanoseconds hold (±292 years) saturates at
/// nanoseconds::max() (or min()). Negative durations are valid protos: callers that
/// need a non-negative one check.
Result<std::chrono::nanoseconds> ParseProtoDuration(std::string_view text);

/// One enum's proto names by number.
using EnumTable = std::span<const std::pair<int, std::string_view>>;

/// The enum name of `value`, which may be a name ("READ_ONLY") or a number (2, or "2").
/// InvalidArgument, in Google's words, when it is neither.
Result<std::string> EnumName(const Json& value, EnumTable table, std::string_view field);

/// Opaque page tokens: the key after which the next page starts.
std::string EncodePageToken(std::string_view last_key);
Result<std::string> DecodePageToken(std::string_view token);

/// Lower-case hex of `n` random-looking digits taken from `bits`.
std::string Hex(uint64_t bits, int digits);

}  // namespace tpufleet::emulator
