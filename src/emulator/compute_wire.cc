#include "emulator/compute_wire.h"

#include <ctime>

namespace tpufleet::emulator {

ComputeError ComputeNotFound(std::string_view path) {
  return {404, "notFound", "The resource '" + std::string(path) + "' was not found",
          "RESOURCE_NOT_FOUND"};
}

ComputeError ComputeInvalid(std::string message) {
  return {400, "invalid", std::move(message), "INVALID_FIELD_VALUE"};
}

HttpResponse ErrorResponse(const ComputeError& error) {
  Json item{{"message", error.message}, {"domain", "global"}, {"reason", error.reason}};
  return JsonResponse(
      Json{{"error",
            {{"code", error.http_status}, {"message", error.message}, {"errors", {item}}}}},
      error.http_status);
}

std::string ComputeRoot(const HttpRequest& req) {
  std::string host = req.Header("host");
  if (host.empty() || host.find_first_of("/ \\\"") != std::string::npos) {
    return "https://www.googleapis.com/compute/v1/";
  }
  return "http://" + host + "/compute/v1/";
}

std::string ComputeTimestamp(Clock::WallTime t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000 - (ms % 1000 < 0 ? 1 : 0));
  int frac = static_cast<int>(((ms % 1000) + 1000) % 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03d-00:00", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
  return buf;
}

}  // namespace tpufleet::emulator
