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

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "provider/provider.h"
#include "util/status.h"

namespace tpufleet {

// What an answer of the API may make tpufleet allocate, connect to or wait for is
// bounded: a broken or hostile endpoint gets an Internal error naming the field, not a
// loop over a count of its choosing.

/// Workers of one node (networkEndpoints, guestAttributes). The largest slice in the
/// catalog, v5p-12288, has 1536 workers; a few times that leaves room for larger ones.
inline constexpr size_t kMaxWorkersPerNode = 8192;
/// Nodes one queued resource makes (the sum of its node specs; a multislice spec makes
/// multisliceParams.nodeCount). Google publishes no limit and the emulator allows 256;
/// the largest multislice run Google has reported used 199 slices. Four times the
/// emulator's limit is generous and still a count tpufleet can track.
inline constexpr size_t kMaxQueuedResourceNodes = 1024;

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

/// Internal when networkEndpoints has more than kMaxWorkersPerNode entries.
Result<CloudNode> ParseNode(const nlohmann::json& node);
/// Internal when a nodeCount is not a whole number from 1 to kMaxQueuedResourceNodes, or
/// the node specs add up to more nodes than that.
Result<CloudQueuedResource> ParseQueuedResource(const nlohmann::json& queued_resource);
/// A done operation's `error` becomes CloudOperation::error (gcp_errors.h).
Result<CloudOperation> ParseOperation(const nlohmann::json& operation);

/// The workers' host keys and hostnames from a getGuestAttributes answer, one per
/// entry of guestAttributes (worker order): "ssh-ed25519 <base64>" from the item keyed
/// "ssh-ed25519", "" when the worker has not published it yet. Internal when there are
/// more than kMaxWorkersPerNode entries.
Result<std::vector<WorkerIdentity>> ParseGuestAttributes(const nlohmann::json& answer);

}  // namespace tpufleet
