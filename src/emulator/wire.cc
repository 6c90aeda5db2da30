#include "emulator/wire.h"

#include "util/encoding.h"
#include "util/strings.h"

namespace tpufleet::emulator {

namespace {

// Each code with its HTTP status (google/rpc/code.proto "HTTP Mapping") and name.
struct CodeRow {
  RpcCode code;
  int http_status;
  std::string_view name;
};
constexpr CodeRow kCodes[] = {
    {RpcCode::kOk, 200, "OK"},
    {RpcCode::kCancelled, 499, "CANCELLED"},
    {RpcCode::kInvalidArgument, 400, "INVALID_ARGUMENT"},
    {RpcCode::kDeadlineExceeded, 504, "DEADLINE_EXCEEDED"},
    {RpcCode::kNotFound, 404, "NOT_FOUND"},
    {RpcCode::kAlreadyExists, 409, "ALREADY_EXISTS"},
    {RpcCode::kPermissionDenied, 403, "PERMISSION_DENIED"},
    {RpcCode::kResourceExhausted, 429, "RESOURCE_EXHAUSTED"},
    {RpcCode::kFailedPrecondition, 400, "FAILED_PRECONDITION"},
    {RpcCode::kAborted, 409, "ABORTED"},
    {RpcCode::kUnimplemented, 501, "UNIMPLEMENTED"},
    {RpcCode::kInternal, 500, "INTERNAL"},
    {RpcCode::kUnavailable, 503, "UNAVAILABLE"},
    {RpcCode::kUnauthenticated, 401, "UNAUTHENTICATED"},
};

// The code a storm's HTTP status stands for; any other status is INTERNAL.
constexpr std::pair<int, RpcCode> kCodeOfHttp[] = {
    {400, RpcCode::kInvalidArgument},   {401, RpcCode::kUnauthenticated},
    {403, RpcCode::kPermissionDenied},  {404, RpcCode::kNotFound},
    {409, RpcCode::kAborted},           {429, RpcCode::kResourceExhausted},
    {501, RpcCode::kUnimplemented},     {503, RpcCode::kUnavailable},
    {504, RpcCode::kDeadlineExceeded},
};

const CodeRow* RowOf(RpcCode code) {
  for (const CodeRow& row : kCodes) {
    if (row.code == code) {
      return &row;
    }
  }
  return nullptr;
}

}  // namespace

int HttpStatusOf(RpcCode code) {
  const CodeRow* row = RowOf(code);
  return row != nullptr ? row->http_status : 500;
}

std::string_view RpcCodeName(RpcCode code) {
  const CodeRow* row = RowOf(code);
  return row != nullptr ? row->name : "UNKNOWN";
}

RpcCode RpcCodeOfHttp(int http_status) {
  for (const auto& [http, code] : kCodeOfHttp) {
    if (http == http_status) {
      return code;
    }
  }
  return RpcCode::kInternal;
}

Json ResourceInfoDetail(std::string_view resource_name) {
  return Json{{"@type", "type.googleapis.com/google.rpc.ResourceInfo"},
              {"resourceName", std::string(resource_name)}};
}

Json ErrorInfoDetail(std::string_view reason, std::string_view domain,
                     const std::map<std::string, std::string>& metadata) {
  Json j{{"@type", "type.googleapis.com/google.rpc.ErrorInfo"},
         {"reason", std::string(reason)},
         {"domain", std::string(domain)}};
  if (!metadata.empty()) {
    j["metadata"] = metadata;
  }
  return j;
}

RpcError NotFound(std::string_view resource_name) {
  return {RpcCode::kNotFound, "Resource '" + std::string(resource_name) + "' was not found",
          Json::array({ResourceInfoDetail(resource_name)})};
}

RpcError AlreadyExists(std::string_view resource_name) {
  return {RpcCode::kAlreadyExists, "Resource '" + std::string(resource_name) + "' already exists",
          Json::array({ResourceInfoDetail(resource_name)})};
}

RpcError InvalidArgument(std::string message) {
  return {RpcCode::kInvalidArgument, std::move(message), Json::array()};
}

HttpResponse ErrorResponse(const RpcError& error) {
  Json e{{"code", HttpStatusOf(error.code)},
         {"message", error.message},
         {"status", std::string(RpcCodeName(error.code))}};
  if (!error.details.empty()) {
    e["details"] = error.details;
  }
  return JsonResponse(Json{{"error", e}}, HttpStatusOf(error.code));
}

Json OperationErrorJson(const RpcError& error) {
  Json e{{"code", static_cast<int>(error.code)}, {"message", error.message}};
  if (!error.details.empty()) {
    e["details"] = error.details;
  }
  return e;
}

HttpResponse JsonResponse(const Json& body, int status) {
  return JsonTextResponse(body.dump(2, ' ', false, Json::error_handler_t::replace), status);
}

HttpResponse JsonTextResponse(std::string text, int status) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(text) + "\n";
  return r;
}

Clock::WallTime AddSaturating(Clock::WallTime t, std::chrono::nanoseconds d) {
  auto since = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch());
  if (d.count() > 0 && since > std::chrono::nanoseconds::max() - d) {
    return Clock::WallTime::max();
  }
  if (d.count() < 0 && since < std::chrono::nanoseconds::min() - d) {
    return Clock::WallTime::min();
  }
  return t + std::chrono::duration_cast<Clock::WallTime::duration>(d);
}

Result<std::chrono::nanoseconds> ParseProtoDuration(std::string_view text) {
  Status bad = InvalidArgumentError("invalid duration \"" + std::string(text) +
                                    "\": expected seconds with an s suffix, e.g. 3600s, "
                                    "within ±315576000000s");
  if (text.size() < 2 || text.back() != 's') {
    return bad;
  }
  std::string_view num = text.substr(0, text.size() - 1);
  bool negative = false;
  if (!num.empty() && num[0] == '-') {
    negative = true;
    num.remove_prefix(1);
  }
  size_t dot = num.find('.');
  std::string_view whole = num.substr(0, dot);
  std::string_view frac = dot == std::string_view::npos ? std::string_view() : num.substr(dot + 1);
  long long secs = 0;
  if (whole.empty() || !ParseInt(whole, &secs) || secs > kMaxProtoDurationSeconds) {
    return bad;
  }
  long long nanos = 0;
  if (dot != std::string_view::npos) {
    if (frac.empty() || frac.size() > 9) {
      return bad;
    }
    long long f = 0;
    if (!ParseInt(frac, &f)) {
      return bad;
    }
    nanos = f;
    for (size_t i = frac.size(); i < 9; ++i) {
      nanos *= 10;
    }
  }
  // Past ±292 years nanoseconds overflow: such a Duration saturates.
  constexpr long long kMaxNanosSeconds = std::chrono::nanoseconds::max().count() / 1'000'000'000;
  if (secs >= kMaxNanosSeconds) {
    return negative ? std::chrono::nanoseconds::min() : std::chrono::nanoseconds::max();
  }
  auto d = std::chrono::seconds(secs) + std::chrono::nanoseconds(nanos);
  return negative ? -d : d;
}

Result<std::string> EnumName(const Json& value, EnumTable table, std::string_view field) {
  auto invalid = [&](const std::string& shown) {
    return InvalidArgumentError("Invalid value at '" + std::string(field) + "' (" + shown + ")");
  };
  long long number = -1;
  if (value.is_number_integer()) {
    number = value.get<long long>();
  } else if (value.is_string()) {
    std::string s = value.get<std::string>();
    if (!ParseInt(s, &number)) {
      for (const auto& [n, name] : table) {
        if (name == s) {
          return s;
        }
      }
      return invalid("\"" + s + "\"");
    }
  } else {
    return invalid(value.dump());
  }
  for (const auto& [n, name] : table) {
    if (n == number) {
      return std::string(name);
    }
  }
  return invalid(std::to_string(number));
}

std::string EncodePageToken(std::string_view last_key) {
  return Base64UrlEncode(last_key);
}

Result<std::string> DecodePageToken(std::string_view token) {
  // Only EncodePageToken's own output is a token: no padding, no standard-alphabet digits.
  Result<std::string> key = Base64UrlDecode(token);
  if (!key.ok() || token.find_first_of("+/=") != std::string_view::npos) {
    return InvalidArgumentError("Invalid page token.");
  }
  return key;
}

std::string Hex(uint64_t bits, int digits) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(static_cast<size_t>(digits), '0');
  for (int i = digits - 1; i >= 0; --i) {
    out[static_cast<size_t>(i)] = kDigits[bits & 15];
    bits >>= 4;
  }
  return out;
}

}  // namespace tpufleet::emulator
