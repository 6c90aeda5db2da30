#include "provider/gcp_errors.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <utility>

#include "provider/gcp_json.h"
#include "util/log.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

using Json = nlohmann::json;

// google/rpc/code.proto names by number.
constexpr std::array<std::pair<int, std::string_view>, 17> kRpcCodes = {{
    {0, "OK"},
    {1, "CANCELLED"},
    {2, "UNKNOWN"},
    {3, "INVALID_ARGUMENT"},
    {4, "DEADLINE_EXCEEDED"},
    {5, "NOT_FOUND"},
    {6, "ALREADY_EXISTS"},
    {7, "PERMISSION_DENIED"},
    {8, "RESOURCE_EXHAUSTED"},
    {9, "FAILED_PRECONDITION"},
    {10, "ABORTED"},
    {11, "OUT_OF_RANGE"},
    {12, "UNIMPLEMENTED"},
    {13, "INTERNAL"},
    {14, "UNAVAILABLE"},
    {15, "DATA_LOSS"},
    {16, "UNAUTHENTICATED"},
}};

constexpr int kResourceExhausted = 8;
constexpr int kFailedPrecondition = 9;

int RpcCodeOfName(std::string_view name) {
  for (const auto& [code, n] : kRpcCodes) {
    if (n == name) {
      return code;
    }
  }
  return -1;
}

// The gRPC code Google maps an HTTP status to, for answers without an envelope.
int RpcCodeOfHttp(int http) {
  switch (http) {
    case 400:
      return 3;
    case 401:
      return 16;
    case 403:
      return 7;
    case 404:
      return 5;
    case 409:
      return 6;
    case 429:
      return 8;
    case 499:
      return 1;
    case 501:
      return 12;
    case 502:
    case 503:
      return 14;
    case 504:
      return 4;
    default:
      return http >= 500 ? 13 : 2;
  }
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// The `reason` of the first ErrorInfo detail, "" when there is none.
std::string ErrorInfoReason(const Json& details) {
  if (!details.is_array()) {
    return "";
  }
  for (const Json& d : details) {
    if (JsonString(d, "@type") == "type.googleapis.com/google.rpc.ErrorInfo") {
      return JsonString(d, "reason");
    }
  }
  return "";
}

enum class Exhaustion { kQuota, kRateLimit, kUnsaid };

// What a RESOURCE_EXHAUSTED is about: the ErrorInfo reason when given, else the words.
// "Quota exceeded for … 'Write requests per minute'" is a rate limit, not a quota.
Exhaustion KindOfExhaustion(std::string_view message, const Json& details) {
  std::string reason = ErrorInfoReason(details);
  if (reason == "RATE_LIMIT_EXCEEDED") {
    return Exhaustion::kRateLimit;
  }
  if (reason == "RESOURCE_QUOTA_EXCEEDED") {
    return Exhaustion::kQuota;
  }
  std::string text = Lower(message);
  if (text.find("per minute") != std::string::npos ||
      text.find("rate limit") != std::string::npos) {
    return Exhaustion::kRateLimit;
  }
  if (text.find("quota") != std::string::npos) {
    return Exhaustion::kQuota;
  }
  return Exhaustion::kUnsaid;
}

}  // namespace

Status ClassifyRpcStatus(int code, std::string_view message, const Json& details,
                         RpcOrigin origin) {
  std::string m(message);
  if (m.empty()) {
    m = "the API gave no message (gRPC code " + std::to_string(code) + ")";
  }
  switch (code) {
    case 3:   // INVALID_ARGUMENT
    case 11:  // OUT_OF_RANGE
      return InvalidArgumentError(m);
    case 5:
      return NotFoundError(m);
    case 6:
      return AlreadyExistsError(m);
    case 7:   // PERMISSION_DENIED, also "Location … is not found or access is unauthorized."
    case 16:  // UNAUTHENTICATED
      return PermissionDeniedError(m);
    case kResourceExhausted:
      switch (KindOfExhaustion(message, details)) {
        case Exhaustion::kQuota:
          return FailedPreconditionError(m);
        case Exhaustion::kRateLimit:
          return UnavailableError(m);
        case Exhaustion::kUnsaid:
          // Answered at once it is a request limit; an operation that fails with it met
          // a stockout ("There is no more capacity in the zone …").
          return origin == RpcOrigin::kHttpAnswer ? UnavailableError(m) : ResourceExhaustedError(m);
      }
      break;
    case kFailedPrecondition:
      if (m.find("Insufficient reserved capacity") != std::string::npos) {
        return ResourceExhaustedError(m);
      }
      return FailedPreconditionError(m);
    case 4:  // DEADLINE_EXCEEDED
      return TimeoutError(m);
    case 1:   // CANCELLED
    case 2:   // UNKNOWN
    case 10:  // ABORTED: a concurrent change; the call may be made again
    case 13:  // INTERNAL: seen on spot creates that later succeed
    case 14:  // UNAVAILABLE
      return UnavailableError(m);
    default:
      break;
  }
  return InternalError(m);
}

Status ClassifyHttpError(int http_status, std::string_view body) {
  Json j = Json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_object()) {
    const Json& e = j["error"];
    int code = RpcCodeOfName(JsonString(e, "status"));
    if (code < 0) {
      code = RpcCodeOfHttp(http_status);
    }
    Json details = e.contains("details") ? e["details"] : Json::array();
    Status s = ClassifyRpcStatus(code, JsonString(e, "message"), details, RpcOrigin::kHttpAnswer);
    // A 5xx is worth a retry whatever its envelope says.
    if (http_status == 500 || http_status == 502 || http_status == 503 || http_status == 504) {
      return s.code() == StatusCode::kTimeout ? s : UnavailableError(s.message());
    }
    return s;
  }
  // Not Google's envelope: a proxy or load balancer answered. Show a little of it.
  std::string text(Trim(body.substr(0, 200)));
  std::string message =
      "HTTP " + std::to_string(http_status) + (text.empty() ? "" : ": " + Redact(text));
  return ClassifyRpcStatus(RpcCodeOfHttp(http_status), message, Json::array(),
                           RpcOrigin::kHttpAnswer);
}

Status ClassifyOperationError(const Json& error) {
  if (!error.is_object()) {
    return InternalError("the operation failed without saying why");
  }
  int code = 2;
  if (error.contains("code") && error["code"].is_number_integer()) {
    code = error["code"].get<int>();
  }
  Json details = error.contains("details") ? error["details"] : Json::array();
  return ClassifyRpcStatus(code, JsonString(error, "message"), details, RpcOrigin::kOperation);
}

}  // namespace tpufleet
