#include "api/json_internal.h"

namespace tpufleet::api::internal {

std::string Dump(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json ErrorJson(const Error& error) {
  return {{"code", error.code}, {"message", error.message}};
}

nlohmann::json WithError(nlohmann::json j, const std::optional<Error>& error) {
  if (error) {
    j["error"] = ErrorJson(*error);
  }
  return j;
}

}  // namespace tpufleet::api::internal
