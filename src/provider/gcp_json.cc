#include "provider/gcp_json.h"

#include <cstdint>
#include <utility>

#include "provider/gcp_errors.h"
#include "util/strings.h"
#include "util/timestamp.h"

namespace tpufleet {
namespace {

using Json = nlohmann::json;

std::string Str(const Json& j, const char* key) {
  if (j.is_object() && j.contains(key) && j[key].is_string()) {
    return j[key].get<std::string>();
  }
  return "";
}

bool Bool(const Json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_boolean() && j[key].get<bool>();
}

const Json& Member(const Json& j, const char* key) {
  static const Json kNull;
  return j.is_object() && j.contains(key) ? j[key] : kNull;
}

std::map<std::string, std::string> StringMap(const Json& j) {
  std::map<std::string, std::string> out;
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      out[k] = v.is_string() ? v.get<std::string>() : v.dump();
    }
  }
  return out;
}

// Fills the cloud_name, zone and id of `out` (a CloudNode or CloudQueuedResource) from
// the resource's name, "projects/{p}/locations/{zone}/{collection}/{id}".
template <typename Resource>
Status ReadName(const Json& resource, std::string_view collection, Resource* out) {
  out->cloud_name = Str(resource, "name");
  std::vector<std::string> parts = Split(out->cloud_name, '/');
  if (parts.size() != 6 || parts[0] != "projects" || parts[2] != "locations" ||
      parts[4] != collection || parts[3].empty() || parts[5].empty()) {
    return InternalError("the TPU API returned a " + std::string(collection) +
                         " resource named \"" + out->cloud_name +
                         "\", not projects/…/locations/…/" + std::string(collection) + "/…");
  }
  out->zone = parts[3];
  out->id = parts[5];
  return Status::Ok();
}

Capacity CapacityOf(const Json& scheduling) {
  if (Bool(scheduling, "spot") || Bool(scheduling, "preemptible")) {
    return Capacity::kSpot;
  }
  return Bool(scheduling, "reserved") ? Capacity::kReserved : Capacity::kOnDemand;
}

// An array of one entry per worker must fit kMaxWorkersPerNode.
Status CheckWorkerCount(const Json& array, const char* field, const std::string& where) {
  if (array.is_array() && array.size() > kMaxWorkersPerNode) {
    return InternalError("the TPU API returned " + std::to_string(array.size()) + " " + field +
                         " in " + where + "; tpufleet accepts at most " +
                         std::to_string(kMaxWorkersPerNode) + " workers in one node");
  }
  return Status::Ok();
}

}  // namespace

std::string JsonString(const Json& j, const char* key) { return Str(j, key); }

std::string LocationName(std::string_view project, std::string_view zone) {
  return "projects/" + std::string(project) + "/locations/" + std::string(zone);
}

Json NodeBody(const CreateNodeRequest& request, bool in_queued_resource) {
  Json node{{"acceleratorType", request.type},
            {"runtimeVersion", request.runtime_version},
            {"labels", Json::object()},
            {"metadata", Json::object()},
            // Workers get external addresses so ssh reaches them from outside the VPC.
            {"networkConfig", {{"enableExternalIps", true}}}};
  for (const auto& [k, v] : request.labels) {
    node["labels"][k] = v;
  }
  for (const auto& [k, v] : request.metadata) {
    node["metadata"][k] = v;
  }
  if (request.capacity == Capacity::kSpot && !in_queued_resource) {
    node["schedulingConfig"] = {{"spot", true}};
  } else if (request.capacity == Capacity::kReserved) {
    node["schedulingConfig"] = {{"reserved", true}};
  }
  if (!request.data_disks.empty()) {
    Json disks = Json::array();
    for (const DataDiskSpec& d : request.data_disks) {
      disks.push_back({{"sourceDisk", d.source},
                       {"mode", d.mode == DiskMode::kReadOnly ? "READ_ONLY" : "READ_WRITE"}});
    }
    node["dataDisks"] = std::move(disks);
  }
  return node;
}

Json QueuedResourceBody(const CreateNodeRequest& request, std::string_view parent) {
  Json spec{{"parent", std::string(parent)},
            {"nodeId", request.node_id},
            {"node", NodeBody(request, /*in_queued_resource=*/true)}};
  Json qr{{"tpu", {{"nodeSpec", Json::array({std::move(spec)})}}}};
  // v2's tiers are spot and guaranteed; on-demand and reserved requests name neither
  // (reserved is the node's schedulingConfig.reserved).
  if (request.capacity == Capacity::kSpot) {
    qr["spot"] = Json::object();
  }
  if (request.queued && request.queued->valid_until) {
    qr["queueingPolicy"] = {
        {"validUntilDuration", std::to_string(request.queued->valid_until->count()) + "s"}};
  }
  return qr;
}

Result<CloudNode> ParseNode(const Json& node) {
  CloudNode out;
  TPUFLEET_TRY(ReadName(node, "nodes", &out));
  out.type = Str(node, "acceleratorType");
  out.runtime_version = Str(node, "runtimeVersion");
  out.state = NodeState::Parse(Str(node, "state"));
  out.health = Str(node, "health");
  out.capacity = CapacityOf(Member(node, "schedulingConfig"));
  out.queued_resource = Str(node, "queuedResource");
  out.labels = StringMap(Member(node, "labels"));
  out.metadata = StringMap(Member(node, "metadata"));
  if (const Json& disks = Member(node, "dataDisks"); disks.is_array()) {
    for (const Json& d : disks) {
      // AttachedDisk.mode: READ_WRITE is also what an unspecified mode means.
      std::string source = Str(d, "sourceDisk");
      if (!source.empty()) {
        out.data_disks.push_back(
            {source, std::string(DiskModeName(Str(d, "mode") == "READ_ONLY" ? DiskMode::kReadOnly
                                                                            : DiskMode::kReadWrite))});
      }
    }
  }
  const Json& endpoints = Member(node, "networkEndpoints");
  TPUFLEET_TRY(CheckWorkerCount(endpoints, "networkEndpoints", out.cloud_name));
  if (endpoints.is_array()) {
    for (size_t i = 0; i < endpoints.size(); ++i) {
      CloudWorker w;
      w.index = static_cast<int>(i);
      w.address = Str(endpoints[i], "ipAddress");
      w.external_address = Str(Member(endpoints[i], "accessConfig"), "externalIp");
      out.workers.push_back(std::move(w));
    }
  }
  if (std::string t = Str(node, "createTime"); !t.empty()) {
    if (Result<Clock::WallTime> when = ParseTimestamp(t); when.ok()) {
      out.create_time = *when;
    }
  }
  return out;
}

Result<CloudQueuedResource> ParseQueuedResource(const Json& queued_resource) {
  CloudQueuedResource out;
  TPUFLEET_TRY(ReadName(queued_resource, "queuedResources", &out));
  const Json& state = Member(queued_resource, "state");
  out.state = NodeState::Parse(Str(state, "state"));
  if (out.state == NodeState::kFailed) {
    const Json& error = Member(Member(state, "failedData"), "error");
    out.failure = error.is_object() ? ClassifyOperationError(error)
                                    : FailedPreconditionError("queued resource " + out.cloud_name +
                                                              " failed; the API gave no reason");
  }
  const Json& specs = Member(Member(queued_resource, "tpu"), "nodeSpec");
  if (specs.is_array()) {
    for (const Json& spec : specs) {
      if (std::string id = Str(spec, "nodeId"); !id.empty()) {
        out.node_ids.push_back(id);
        continue;
      }
      // A multislice spec makes {prefix}-0 … {prefix}-{count-1} (tpu-api.md §4).
      const Json& multislice = Member(spec, "multisliceParams");
      std::string prefix = Str(multislice, "nodeIdPrefix");
      if (prefix.empty()) {
        prefix = out.id;
      }
      const Json& count = Member(multislice, "nodeCount");
      if (count.is_null()) {
        continue;
      }
      // nodeCount is an int32 in the proto: a number, or a string (int64 style).
      long long n = -1;
      if (count.is_number_integer()) {
        n = count.is_number_unsigned() && count.get<uint64_t>() > INT64_MAX
                ? INT64_MAX
                : count.get<long long>();
      } else if (count.is_string() && !ParseInt(count.get<std::string>(), &n)) {
        n = -1;
      }
      size_t room = kMaxQueuedResourceNodes - out.node_ids.size();
      if (n < 1 || static_cast<unsigned long long>(n) > room) {
        return InternalError("the TPU API returned queued resource " + out.cloud_name +
                             " with multisliceParams.nodeCount " + count.dump() +
                             "; tpufleet accepts 1 to " +
                             std::to_string(kMaxQueuedResourceNodes) +
                             " nodes in one queued resource");
      }
      for (long long k = 0; k < n; ++k) {
        out.node_ids.push_back(prefix + "-" + std::to_string(k));
      }
    }
  }
  if (out.node_ids.size() > kMaxQueuedResourceNodes) {
    return InternalError("the TPU API returned queued resource " + out.cloud_name + " with " +
                         std::to_string(out.node_ids.size()) + " node specs; tpufleet accepts " +
                         "at most " + std::to_string(kMaxQueuedResourceNodes));
  }
  return out;
}

Result<CloudOperation> ParseOperation(const Json& operation) {
  CloudOperation out;
  out.name = Str(operation, "name");
  if (out.name.empty()) {
    return InternalError("the TPU API returned an operation without a name");
  }
  out.done = Bool(operation, "done");
  if (out.done && operation.contains("error")) {
    out.error = ClassifyOperationError(operation["error"]);
  }
  return out;
}

Result<std::vector<WorkerIdentity>> ParseGuestAttributes(const Json& answer) {
  std::vector<WorkerIdentity> out;
  const Json& entries = Member(answer, "guestAttributes");
  TPUFLEET_TRY(CheckWorkerCount(entries, "guestAttributes", "a getGuestAttributes answer"));
  if (!entries.is_array()) {
    return out;
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    WorkerIdentity w;
    w.index = static_cast<int>(i);
    const Json& items = Member(Member(entries[i], "queryValue"), "items");
    for (const Json& item : items.is_array() ? items : Json::array()) {
      std::string key = Str(item, "key");
      std::string value = Str(item, "value");
      if (key == "ssh-ed25519" && !value.empty()) {
        w.host_key = "ssh-ed25519 " + value;
      } else if (key == "hostname") {
        w.hostname = value;
      }
    }
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace tpufleet
