// The JSON of Cloud TPU API v2 resources as the gcp-tpu provider writes and reads them
// (shared/reference/tpu-api.md §3 Node, §4 QueuedResource, §5 Operation): request bodies
// from a CreateNodeRequest, and CloudNode, CloudQueuedResource, CloudOperation and
// WorkerIdentity from answers. Internal to src/provider.
//
// Readers are lenient where Google may add or omit fields (unknown fields are ignored,
// absent ones stay empty) and strict only about what they cannot do without: a
// resource without a well-formed `name` is Internal (the API broke its contract).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "provider/provider.h"
#include "util/status.h"

namespace tpufleet {

/// The string member `key` of `j`; "" when `j` is not an object, or the member is
/// missing or not a string. Unlike json::value() it never throws, whatever the API sent.
std::string JsonString(const nlohmann::json& j, const char* key);

/// "projects/{project}/locations/{zone}".
std::string LocationName(std::string_view project, std::string_view zone);

/// The Node body of nodes.create (and of a queued resource's node spec): type, runtime,
/// labels, metadata, external IPs, schedulingConfig (spot/reserved) and dataDisks.
/// `in_queued_resource`: spot is then the queued resource's tier, not the node's.
nlohmann::json NodeBody(const CreateNodeRequest& request, bool in_queued_resource);

/// The QueuedResource body of queuedResources.create for `request` (whose `queued` is
/// set): one node spec making node_id in `parent`, the spot tier when spot, and the
/// queueing policy's validUntilDuration when valid_until is set.
nlohmann::json QueuedResourceBody(const CreateNodeRequest& request, std::string_view parent);

Result<CloudNode> ParseNode(const nlohmann::json& node);
Result<CloudQueuedResource> ParseQueuedResource(const nlohmann::json& queued_resource);
/// A done operation's `error` becomes CloudOperation::error (gcp_errors.h).
Result<CloudOperation> ParseOperation(const nlohmann::json& operation);

/// The workers' host keys and hostnames from a getGuestAttributes answer, one per
/// entry of guestAttributes (worker order): "ssh-ed25519 <base64>" from the item keyed
/// "ssh-ed25519", "" when the worker has not published it yet.
std::vector<WorkerIdentity> ParseGuestAttributes(const nlohmann::json& answer);

}  // namespace tpufleet
