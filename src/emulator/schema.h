// Request schema checks of the emulated Cloud TPU API (internal to src/emulator).
//
// Google's front end parses request bodies against the proto: it accepts lowerCamel
// and original snake_case field names, drops nulls, and rejects an unknown field with
// 400 `Invalid JSON payload received. Unknown name "foo" at 'node': Cannot find field.`
// Canonicalize does the same for the messages a client may send (Node, QueuedResource
// and their parts, from the v2 discovery document), so a misspelt field in tpufleet's
// own client fails here as it would against Google.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "emulator/api_internal.h"

namespace tpufleet::emulator {

/// `in` as the message `type` ("Node", "QueuedResource", "GetGuestAttributesRequest")
/// with canonical lowerCamel names, nulls removed; `at` is its snake_case path in error
/// messages ("node", "queued_resource"; "" for the request itself).
RpcOr<Json> Canonicalize(const Json& in, std::string_view type, std::string_view at);

/// "network_config.enable_external_ips" -> "networkConfig.enableExternalIps".
std::string SnakeToCamel(std::string_view name);
/// "networkConfig" -> "network_config".
std::string CamelToSnake(std::string_view name);

}  // namespace tpufleet::emulator
