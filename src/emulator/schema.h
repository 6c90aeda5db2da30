// Request schema checks of the emulated Cloud TPU API (internal to src/emulator).
//
// Google's front end parses request bodies against the proto: it accepts lowerCamel
// and original snake_case field names, drops nulls, and rejects an unknown field with
// 400 `Invalid JSON payload received. Unknown name "foo" at 'node': Cannot find field.`
// Canonicalize does the same for the messages a client may send (Node, QueuedResource
// and their parts), so a misspelt field in tpufleet's own client fails here as it would
// against Google.
//
// Two API versions share one table: v2 (the discovery document in
// shared/reference/tpu-v2-discovery.json) and v2alpha1 (gcloud's generated
// tpu_v2alpha1_messages.py), whose messages are v2's plus alpha-only fields
// (Node.autocheckpointEnabled, SchedulingConfig.provisioningModel, QueuedResource.runDuration
// …) and one rename (NodeSpec.multiNodeParams for v2's multisliceParams). A body is
// checked against its request's version and stored as the union; ForVersion projects a
// stored message back onto one version, as Google's front end serialises one proto per
// version: a v2 client never sees an alpha-only field.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "emulator/api_internal.h"

namespace tpufleet::emulator {

/// `in` as the message `type` ("Node", "QueuedResource", "GetGuestAttributesRequest")
/// of API `version` ("v2", "v2alpha1"; anything else reads as v2) with canonical
/// lowerCamel names, the stored name of a renamed field, enum values by name, nulls
/// removed; `at` is its snake_case path in error messages ("node", "queued_resource";
/// "" for the request itself).
RpcOr<Json> Canonicalize(const Json& in, std::string_view type, std::string_view at,
                         std::string_view version);

/// `stored` (a message `type` as the emulator keeps and renders it) as API `version`
/// serialises it: the fields that version lacks are left out, renamed ones take that
/// version's name. Fields the schema leaves opaque (state, networkEndpoints …) pass.
Json ForVersion(const Json& stored, std::string_view type, std::string_view version);

/// "network_config.enable_external_ips" -> "networkConfig.enableExternalIps".
std::string SnakeToCamel(std::string_view name);
/// "networkConfig" -> "network_config".
std::string CamelToSnake(std::string_view name);

}  // namespace tpufleet::emulator
