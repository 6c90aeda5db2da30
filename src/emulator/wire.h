// Wire helpers of the emulator's Cloud TPU API (internal to src/emulator): gRPC codes
// and their HTTP mapping, Google's JSON error envelope, proto3-JSON timestamps and
// durations, enum values that arrive as names or numbers, and opaque page tokens.
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

/// RFC 3339 in UTC with 0, 3, 6 or 9 fractional digits, as proto3 JSON writes
/// Timestamps: "2026-01-01T00:00:00Z", "2026-01-01T00:00:01.500Z".
std::string FormatTimestamp(Clock::WallTime t);
/// Parses an RFC 3339 timestamp ("…Z" or "…+02:00", any fractional digits).
Result<Clock::WallTime> ParseTimestamp(std::string_view text);
/// Parses a proto3-JSON Duration: "3600s", "1.5s", "0.000001s".
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
