// What api's .cc files share to build their JSON. Private to src/api: no other module
// includes it.
//
// It is the one api header with nlohmann/json in it, because its helpers take and give
// nlohmann::json values; api owns nlohmann_json (its public headers keep it out, so the
// CLI, the server and the dashboard see plain structs and strings only).
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "api/fleet.h"

namespace tpufleet::api::internal {

/// The text of `j`: indented by `indent` spaces (-1: on one line), no final newline.
/// Bytes that are not UTF-8 become U+FFFD instead of an exception (a worker's output,
/// a cloud's state: nothing promises they are text).
std::string Dump(const nlohmann::json& j, int indent);

/// The value, or null.
template <typename T>
nlohmann::json OrNull(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

/// {"code", "message"}.
nlohmann::json ErrorJson(const Error& error);

}  // namespace tpufleet::api::internal
