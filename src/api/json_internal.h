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
#include <vector>

#include <nlohmann/json.hpp>

#include "api/fleet.h"

namespace tpufleet::api::internal {

/// The text of `j`: indented by `indent` spaces (-1: on one line), no final newline.
/// Bytes that are not UTF-8 become U+FFFD instead of an exception (a worker's output,
/// a cloud's state: nothing promises they are text).
std::string Dump(const nlohmann::json& j, int indent);

/// Documents (every --json output but the one-line ones) are indented by two spaces.
inline constexpr int kDocumentIndent = 2;

/// A JSON array of `to_json(x)` for each x of `items`, in order.
template <typename T, typename ToJson>
nlohmann::json ArrayOf(const std::vector<T>& items, const ToJson& to_json) {
  nlohmann::json out = nlohmann::json::array();
  for (const T& x : items) {
    out.push_back(to_json(x));
  }
  return out;
}

/// The value, or null.
template <typename T>
nlohmann::json OrNull(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

/// {"code", "message"}.
nlohmann::json ErrorJson(const Error& error);

/// `j` with "error": ErrorJson(*error) added when there is one.
nlohmann::json WithError(nlohmann::json j, const std::optional<Error>& error);

}  // namespace tpufleet::api::internal
