#include "provider/gcp_tpu.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>
#include <utility>

#include "provider/gcp_json.h"
#include "util/encoding.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

using Json = nlohmann::json;

bool IsEndpointOverride(std::string_view url) {
  std::string_view rest;
  if (StartsWith(url, "http://")) {
    rest = url.substr(7);
  } else if (StartsWith(url, "https://")) {
    rest = url.substr(8);
  } else {
    return false;
  }
  return !rest.empty() && rest.front() != '/' && url.back() == '/';
}

template <typename T>
Result<std::vector<T>> ParseEach(const std::vector<Json>& items, Result<T> (*parse)(const Json&)) {
  std::vector<T> out;
  for (const Json& item : items) {
    TPUFLEET_ASSIGN_OR_RETURN(T parsed, parse(item));
    out.push_back(std::move(parsed));
  }
  return out;
}

// A request needs both; an empty one would name the collection instead of an item.
Status RequireIds(std::string_view zone, std::string_view id, std::string_view what) {
  if (zone.empty() || id.empty()) {
    return InvalidArgumentError(std::string(what) + " needs a zone and an id");
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> ResolveTpuEndpoint(const EnvLookup& env) {
  std::optional<std::string> v = env ? env("CLOUDSDK_API_ENDPOINT_OVERRIDES_TPU") : std::nullopt;
  if (!v || v->empty()) {
    return std::string(kTpuEndpoint);
  }
  if (!IsEndpointOverride(*v)) {
    // gcloud's EndpointValidator, word for word.
    return InvalidArgumentError(
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_TPU: The endpoint_overrides property must be an "
        "absolute URI beginning with http:// or https:// and ending with a trailing '/'. [" +
        *v + "] is not a valid endpoint override.");
  }
  return *v;
}

GcpTpuProvider::GcpTpuProvider(GcpTpuOptions options, TokenSource& tokens, HttpClient& http,
                               Clock& clock)
    : options_(std::move(options)),
      api_(options_.endpoint, options_.retry, options_.seed, options_.request_timeout, tokens, http,
           clock) {}

std::string GcpTpuProvider::ZonePath(std::string_view zone) const {
  return "v2/projects/" + UrlEscape(options_.project) + "/locations/" + UrlEscape(zone);
}

Result<CloudOperation> GcpTpuProvider::StartOperation(const ApiRequest& request) {
  TPUFLEET_ASSIGN_OR_RETURN(Json op, api_.Call(request));
  return ParseOperation(op);
}

Result<CloudOperation> GcpTpuProvider::CreateNode(const CreateNodeRequest& request) {
  TPUFLEET_TRY(RequireIds(request.zone, request.node_id, "CreateNode"));
  ApiRequest call;
  call.method = "POST";
  if (!request.queued) {
    call.path = ZonePath(request.zone) + "/nodes";
    call.query = {{"nodeId", request.node_id}};
    call.body = NodeBody(request, /*in_queued_resource=*/false);
    return StartOperation(call);
  }
  std::string request_id = request.request_id.empty() ? api_.NewRequestId() : request.request_id;
  call.path = ZonePath(request.zone) + "/queuedResources";
  call.query = {{"queuedResourceId", request.node_id}, {"requestId", request_id}};
  call.body = QueuedResourceBody(request, LocationName(options_.project, request.zone));
  return StartOperation(call);
}

Result<CloudOperation> GcpTpuProvider::DeleteNode(std::string_view zone, std::string_view node_id) {
  TPUFLEET_TRY(RequireIds(zone, node_id, "DeleteNode"));
  ApiRequest call;
  call.method = "DELETE";
  call.path = ZonePath(zone) + "/nodes/" + UrlEscape(node_id);
  return StartOperation(call);
}

Result<CloudOperation> GcpTpuProvider::StopNode(std::string_view zone, std::string_view node_id) {
  TPUFLEET_TRY(RequireIds(zone, node_id, "StopNode"));
  return NodeVerb(zone, node_id, "stop");
}

Result<CloudOperation> GcpTpuProvider::StartNode(std::string_view zone, std::string_view node_id) {
  TPUFLEET_TRY(RequireIds(zone, node_id, "StartNode"));
  return NodeVerb(zone, node_id, "start");
}

Result<CloudOperation> GcpTpuProvider::NodeVerb(std::string_view zone, std::string_view node_id,
                                                std::string_view verb) {
  ApiRequest call;
  call.method = "POST";
  call.path = ZonePath(zone) + "/nodes/" + UrlEscape(node_id) + ":" + std::string(verb);
  call.body = Json::object();
  return StartOperation(call);
}

Result<CloudOperation> GcpTpuProvider::DeleteQueuedResource(std::string_view zone,
                                                            std::string_view id, bool force) {
  TPUFLEET_TRY(RequireIds(zone, id, "DeleteQueuedResource"));
  ApiRequest call;
  call.method = "DELETE";
  call.path = ZonePath(zone) + "/queuedResources/" + UrlEscape(id);
  if (force) {
    call.query.emplace_back("force", "true");
  }
  // Retries within this call are then one delete to the API.
  call.query.emplace_back("requestId", api_.NewRequestId());
  return StartOperation(call);
}

Result<CloudOperation> GcpTpuProvider::SetSshKeys(std::string_view zone, std::string_view node_id,
                                                  std::string_view ssh_keys) {
  TPUFLEET_TRY(RequireIds(zone, node_id, "SetSshKeys"));
  std::string path = ZonePath(zone) + "/nodes/" + UrlEscape(node_id);
  TPUFLEET_ASSIGN_OR_RETURN(Json node, api_.Call({.method = "GET", .path = path}));
  // The mask replaces the whole map: send every other entry back as it was.
  Json metadata =
      node.contains("metadata") && node["metadata"].is_object() ? node["metadata"] : Json::object();
  if (ssh_keys.empty()) {
    metadata.erase("ssh-keys");
  } else {
    metadata["ssh-keys"] = std::string(ssh_keys);
  }
  ApiRequest call;
  call.method = "PATCH";
  call.path = path;
  call.query = {{"updateMask", "metadata"}};
  call.body = Json{{"metadata", std::move(metadata)}};
  return StartOperation(call);
}

Result<CloudOperation> GcpTpuProvider::GetOperation(std::string_view name) {
  if (!StartsWith(name, "projects/") || name.find('?') != std::string_view::npos ||
      name.find("..") != std::string_view::npos) {
    return InvalidArgumentError("not an operation name: \"" + std::string(name) + "\"");
  }
  return StartOperation({.method = "GET", .path = "v2/" + std::string(name)});
}

Result<CloudNode> GcpTpuProvider::GetNode(std::string_view zone, std::string_view node_id) {
  TPUFLEET_TRY(RequireIds(zone, node_id, "GetNode"));
  TPUFLEET_ASSIGN_OR_RETURN(
      Json node,
      api_.Call({.method = "GET", .path = ZonePath(zone) + "/nodes/" + UrlEscape(node_id)}));
  return ParseNode(node);
}

Result<CloudQueuedResource> GcpTpuProvider::GetQueuedResource(std::string_view zone,
                                                              std::string_view id) {
  TPUFLEET_TRY(RequireIds(zone, id, "GetQueuedResource"));
  TPUFLEET_ASSIGN_OR_RETURN(
      Json qr,
      api_.Call({.method = "GET", .path = ZonePath(zone) + "/queuedResources/" + UrlEscape(id)}));
  return ParseQueuedResource(qr);
}

Result<std::vector<Json>> GcpTpuProvider::ListAll(const std::string& path, const char* field) {
  std::vector<Json> items;
  std::string token;
  for (int pages = 1;; ++pages) {
    ApiRequest call{.method = "GET", .path = path};
    if (options_.page_size > 0) {
      call.query.emplace_back("pageSize", std::to_string(options_.page_size));
    }
    if (!token.empty()) {
      call.query.emplace_back("pageToken", token);
    }
    TPUFLEET_ASSIGN_OR_RETURN(Json page, api_.Call(call));
    // A page that cannot be read whole would leave the list short, and nodes missing
    // from it look deleted: the list fails instead.
    if (!page.is_object() || (page.contains(field) && !page[field].is_array()) ||
        (page.contains("nextPageToken") && !page["nextPageToken"].is_string())) {
      return InternalError("the TPU API answered the list at " + path +
                           " with a page that is not a JSON object with an array of " + field +
                           " and a string nextPageToken");
    }
    if (page.contains(field)) {
      if (page[field].size() > kMaxListItems - items.size()) {
        return InternalError("the TPU API listed more than " + std::to_string(kMaxListItems) +
                             " " + field + " at " + path + "; tpufleet stops there");
      }
      for (Json& item : page[field]) {
        items.push_back(std::move(item));
      }
    }
    // A zone the API could not reach would otherwise look empty.
    if (page.contains("unreachable") && page["unreachable"].is_array() &&
        !page["unreachable"].empty()) {
      return UnavailableError("the TPU API could not reach " + page["unreachable"].dump());
    }
    std::string next = JsonString(page, "nextPageToken");
    if (next.empty()) {
      return items;
    }
    if (next == token) {
      return InternalError("the TPU API returned the same page token twice for " + path);
    }
    if (pages >= kMaxListPages) {
      return InternalError("the TPU API kept sending a nextPageToken for " + path + " after " +
                           std::to_string(kMaxListPages) + " pages; tpufleet stops there");
    }
    token = std::move(next);
  }
}

Result<std::vector<Json>> GcpTpuProvider::ListZones(const std::vector<std::string>& zones,
                                                    const char* collection) {
  std::vector<std::optional<Result<std::vector<Json>>>> per_zone(zones.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < zones.size(); i = next++) {
      per_zone[i] = ListAll(ZonePath(zones[i]) + "/" + collection, collection);
    }
  };
  size_t threads = std::min<size_t>(zones.size(), std::max(options_.max_parallel_zones, 1));
  if (threads <= 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    for (size_t t = 0; t < threads; ++t) {
      pool.emplace_back(work);
    }
    for (std::thread& t : pool) {
      t.join();
    }
  }
  std::vector<Json> all;
  for (size_t i = 0; i < zones.size(); ++i) {
    Result<std::vector<Json>>& r = *per_zone[i];
    if (!r.ok()) {
      return r.status().WithContext("listing " + std::string(collection) + " in " + zones[i]);
    }
    for (Json& item : r.value()) {
      all.push_back(std::move(item));
    }
  }
  return all;
}

Result<std::vector<CloudNode>> GcpTpuProvider::ListNodes(const std::vector<std::string>& zones) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<Json> items, ListZones(zones, "nodes"));
  return ParseEach(items, ParseNode);
}

Result<std::vector<CloudQueuedResource>> GcpTpuProvider::ListQueuedResources(
    const std::vector<std::string>& zones) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<Json> items, ListZones(zones, "queuedResources"));
  return ParseEach(items, ParseQueuedResource);
}

Result<std::vector<WorkerIdentity>> GcpTpuProvider::GetWorkerIdentities(std::string_view zone,
                                                                        std::string_view node_id) {
  TPUFLEET_TRY(RequireIds(zone, node_id, "GetWorkerIdentities"));
  ApiRequest call;
  call.method = "POST";
  call.path = ZonePath(zone) + "/nodes/" + UrlEscape(node_id) + ":getGuestAttributes";
  // "" asks for every worker, as gcloud does.
  call.body = Json{{"workerIds", Json::array({""})}};
  TPUFLEET_ASSIGN_OR_RETURN(Json answer, api_.Call(call));
  return ParseGuestAttributes(answer);
}

}  // namespace tpufleet
