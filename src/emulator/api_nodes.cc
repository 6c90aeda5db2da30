// Node endpoints of the emulated Cloud TPU API (tpu-api.md §2–3), and the request
// schema checks shared with queued resources.
#include <algorithm>
#include <set>

#include "emulator/api_internal.h"
#include "emulator/schema.h"
#include "util/strings.h"

namespace tpufleet::emulator {
namespace {

constexpr std::pair<int, std::string_view> kAcceleratorTypes[] = {
    {0, "TYPE_UNSPECIFIED"}, {2, "V2"},   {4, "V3"},  {7, "V4"},
    {9, "V5LITE_POD"},       {10, "V5P"}, {11, "V6E"}};
constexpr std::pair<int, std::string_view> kDiskModes[] = {
    {0, "DISK_MODE_UNSPECIFIED"}, {1, "READ_WRITE"}, {2, "READ_ONLY"}};

// Output-only Node fields: accepted in a request and ignored, as the real API does.
constexpr std::string_view kNodeOutputOnly[] = {
    "name", "state",      "health",   "healthDescription", "createTime",     "networkEndpoints",
    "id",   "apiVersion", "symptoms", "queuedResource",    "multisliceNode", "upcomingMaintenance"};

// The Cloud TPU data-plane port every networkEndpoint names.
constexpr int kTpuEndpointPort = 8470;

bool ValidNodeId(std::string_view id) {
  if (id.empty() || id.size() > 63 || id[0] < 'a' || id[0] > 'z' || id.back() == '-') {
    return false;
  }
  return std::all_of(id.begin(), id.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-';
  });
}

// The base64 part of "ssh-ed25519 AAAA… comment".
std::string KeyBody(const std::string& host_key) {
  std::vector<std::string> parts = Split(host_key, ' ');
  return parts.size() >= 2 ? parts[1] : host_key;
}

std::string KeyType(const std::string& host_key) {
  std::vector<std::string> parts = Split(host_key, ' ');
  return parts.size() >= 2 ? parts[0] : "ssh-ed25519";
}

}  // namespace

RpcOr<ApiServerImpl::NodeInput> ApiServerImpl::ParseNodeInput(const Json& body, std::string_view at,
                                                              std::string_view zone,
                                                              std::string_view version) const {
  EMULATOR_ASSIGN_OR_RETURN_RPC(Json canon, Canonicalize(body, "Node", at, version));
  Json spec = std::move(canon);
  for (std::string_view f : kNodeOutputOnly) {
    spec.erase(std::string(f));
  }
  std::string at_s(at);
  if (spec.contains("acceleratorConfig") && spec["acceleratorConfig"].contains("type")) {
    Result<std::string> t = EnumName(spec["acceleratorConfig"]["type"], kAcceleratorTypes,
                                     at_s + ".accelerator_config.type");
    if (!t.ok()) {
      return InvalidArgument(t.status().message());
    }
    spec["acceleratorConfig"]["type"] = *t;
  }
  if (spec.contains("dataDisks")) {
    for (size_t i = 0; i < spec["dataDisks"].size(); ++i) {
      Json& disk = spec["dataDisks"][i];
      if (disk.contains("mode")) {
        Result<std::string> m = EnumName(disk["mode"], kDiskModes,
                                         at_s + ".data_disks[" + std::to_string(i) + "].mode");
        if (!m.ok()) {
          return InvalidArgument(m.status().message());
        }
        disk["mode"] = *m;
      }
    }
  }
  if (!spec.contains("runtimeVersion") || !spec["runtimeVersion"].is_string() ||
      spec["runtimeVersion"].get<std::string>().empty()) {
    return InvalidArgument("Invalid value for field '" + at_s +
                           ".runtime_version': \"\". A runtime version is required.");
  }
  if (spec.contains("networkConfig") && spec.contains("networkConfigs")) {
    return InvalidArgument(
        "Invalid value for field '" + at_s +
        ".network_configs': network_config and network_configs are mutually exclusive.");
  }

  // The accelerator: a type name ("v4-32") or a config (V4 + "2x2x4") offered in the zone.
  std::vector<const Family*> here = FamiliesInZone(zone);
  std::string valid;
  for (const Family* f : here) {
    for (int size : f->sizes) {
      valid += f->name + "-" + std::to_string(size) + ", ";
    }
  }
  NodeInput in;
  std::string given_type = spec.value("acceleratorType", std::string());
  if (!given_type.empty()) {
    Result<AcceleratorType> t = catalog_.Lookup(given_type);
    bool offered = t.ok() && t->name == given_type &&
                   std::find(here.begin(), here.end(), t->family) != here.end();
    if (!offered) {
      return InvalidArgument("CloudTpu received an invalid AcceleratorType, \"" + given_type +
                             "\" for zone \"" + std::string(zone) + "\". Valid values are \"" +
                             valid + "\".");
    }
    in.type = *t;
  }
  if (spec.contains("acceleratorConfig")) {
    std::string api_type = spec["acceleratorConfig"].value("type", std::string());
    std::string topology = spec["acceleratorConfig"].value("topology", std::string());
    std::optional<AcceleratorType> found;
    for (const Family* f : here) {
      if (f->api_type != api_type) {
        continue;
      }
      for (const auto& [size, topo] : f->topologies) {
        if (topo == topology) {
          Result<AcceleratorType> t = catalog_.Lookup(f->name + "-" + std::to_string(size));
          if (t.ok()) {
            found = *t;
          }
        }
      }
    }
    if (!found || (!given_type.empty() && found->name != in.type.name)) {
      return InvalidArgument("CloudTpu received an invalid AcceleratorConfig, {type: " + api_type +
                             ", topology: " + topology + "} for zone \"" + std::string(zone) +
                             "\". Valid types are \"" + valid + "\".");
    }
    in.type = *found;
  }
  if (given_type.empty() && !spec.contains("acceleratorConfig")) {
    return InvalidArgument("Invalid value for field '" + at_s +
                           ".accelerator_type': \"\". Set accelerator_type or accelerator_config.");
  }
  if (spec.contains("schedulingConfig")) {
    in.spot = IsSpotScheduling(spec["schedulingConfig"]);
  }
  in.spec = std::move(spec);
  return in;
}

Json ApiServerImpl::RenderNode(const EmulatedNode& n) const {
  Json j = n.spec;
  j["name"] = n.name;
  j["acceleratorType"] = n.type.name;
  if (!j.contains("acceleratorConfig")) {
    Json config{{"type", n.type.family->api_type}};
    if (!n.type.topology.empty()) {
      config["topology"] = n.type.topology;
    }
    j["acceleratorConfig"] = config;
  }
  j["state"] = n.state.Name();
  if (!n.health.empty()) {
    j["health"] = n.health;
  }
  j["createTime"] = FormatTimestamp(n.create_time);
  j["id"] = n.uid;
  j["apiVersion"] = n.api_version == "v2alpha1" ? "V2_ALPHA1" : "V2";
  std::string region = RegionOfZone(n.zone);
  if (!j.contains("networkConfig") && !j.contains("networkConfigs")) {
    j["networkConfig"] = Json::object();
  }
  if (j.contains("networkConfig")) {
    Json& net = j["networkConfig"];
    if (!net.contains("network")) {
      net["network"] = "projects/" + n.project + "/global/networks/default";
    }
    if (!net.contains("subnetwork")) {
      net["subnetwork"] = "projects/" + n.project + "/regions/" + region + "/subnetworks/default";
    }
  }
  if (!j.contains("cidrBlock")) {
    j["cidrBlock"] = "10.128.0.0/20";
  }
  if (!j.contains("serviceAccount")) {
    j["serviceAccount"] =
        Json{{"email", ProjectNumber(n.project) + "-compute@developer.gserviceaccount.com"},
             {"scope", Json::array({"https://www.googleapis.com/auth/cloud-platform"})}};
  }
  if (!j.contains("schedulingConfig")) {
    j["schedulingConfig"] = Json::object();
  }
  bool external =
      j.contains("networkConfig") && j["networkConfig"].value("enableExternalIps", false);
  if (j.contains("networkConfigs")) {
    for (const Json& nc : j["networkConfigs"]) {
      external = external || nc.value("enableExternalIps", false);
    }
  }
  if (!n.workers.empty()) {
    Json eps = Json::array();
    for (const WorkerInfo& w : n.workers) {
      Json ep{{"ipAddress", w.address}, {"port", kTpuEndpointPort}};
      if (external) {
        // Worker hosts have one address, reachable from this machine: it is both the
        // internal and the "external" one.
        ep["accessConfig"] = Json{{"externalIp", w.address}};
      }
      eps.push_back(std::move(ep));
    }
    j["networkEndpoints"] = std::move(eps);
  }
  if (!n.queued_resource.empty()) {
    j["queuedResource"] = n.queued_resource;
  }
  if (n.multislice) {
    j["multisliceNode"] = true;
  }
  if (n.maintenance) {
    j["upcomingMaintenance"] =
        Json{{"type", "UNSCHEDULED"},
             {"canReschedule", false},
             {"maintenanceStatus",
              n.maintenance->phase == NodeMaintenance::kNotice ? "PENDING" : "ONGOING"},
             {"windowStartTime", FormatTimestamp(n.maintenance->window_start)},
             {"windowEndTime", FormatTimestamp(n.maintenance->window_end)}};
  }
  return j;
}

RpcError ApiServerImpl::BadState(std::string_view verb, const EmulatedNode& n) {
  return InvalidArgument("Cloud TPU received a bad request. " + std::string(verb) +
                         " is not supported while in state " + n.state.Name() +
                         " " + Eid());
}

RpcError ApiServerImpl::Busy(const EmulatedNode& n) const {
  return RpcError{RpcCode::kAborted,
                  "Resource '" + n.name + "' is busy with operation " +
                      (n.step ? n.step->op : std::string()) + "; retry when it is done.",
                  Json::array({ResourceInfoDetail(n.name)})};
}

RpcOr<EmulatedNode*> ApiServerImpl::SingleWorkerNodeLocked(const Call& c, const std::string& id,
                                                         std::string_view verb, NodeState from) {
  EMULATOR_ASSIGN_OR_RETURN_RPC(EmulatedNode* found, FindIn(c, nodes_, "nodes", id));
  EmulatedNode& n = *found;
  if (n.type.workers > 1) {
    return InvalidArgument("Cloud TPU received a bad request. " + std::string(verb) +
                           " is only available for single TPU nodes; \"" + n.type.name + "\" has " +
                           std::to_string(n.type.workers) + " workers " + Eid());
  }
  if (n.state != from) {
    return BadState(verb, n);
  }
  if (n.step) {
    // A patch of a stopped node may still be running; replacing its step would leave
    // that operation unfinished forever.
    return Busy(n);
  }
  return &n;
}

HttpResponse ApiServerImpl::ListNodes(const Call& c) {
  return ListIn(c, nodes_, "nodes",
                [&](const auto& r) { return ForVersion(RenderNode(r), "Node", c.version); });
}

HttpResponse ApiServerImpl::GetNode(const Call& c, const std::string& id) {
  EMULATOR_ASSIGN_OR_RESPOND(EmulatedNode* found, FindIn(c, nodes_, "nodes", id));
  return JsonResponse(ForVersion(RenderNode(*found), "Node", c.version));
}

HttpResponse ApiServerImpl::CreateNode(const Call& c) {
  if (const OperationRecord* prior = FindRequestLocked(c, "nodes.create")) {
    return JsonResponse(RenderOperation(*prior));
  }
  std::string node_id = c.req->Query("nodeId");
  if (node_id.empty()) {
    return ErrorResponse(
        InvalidArgument("Invalid value for field 'node_id': \"\". A node id is required."));
  }
  if (!ValidNodeId(node_id)) {
    return ErrorResponse(
        InvalidArgument("Invalid value for field 'node_id': \"" + node_id +
                        "\". Must be a match of regex '[a-z]([-a-z0-9]*[a-z0-9])?' and at "
                        "most 63 characters."));
  }
  EMULATOR_ASSIGN_OR_RESPOND(Json body, ParseBody(c));
  EMULATOR_ASSIGN_OR_RESPOND(NodeInput in, ParseNodeInput(body, "node", c.zone, c.version));
  std::string name = c.parent + "/nodes/" + node_id;
  if (nodes_.count(name)) {
    return ErrorResponse(AlreadyExists(name));
  }
  if (std::optional<RpcError> e = CheckQuotaLocked(c, *in.type.family, in.spot,
                                                   in.type.chips, c.now)) {
    return ErrorResponse(*e);
  }
  OperationRecord& op = NewOperationLocked(c, "create", name, "Node");
  StartCreateLocked(c, node_id, std::move(in), op.name, "", false);
  RememberRequestLocked(c, "nodes.create", op.name);
  return JsonResponse(RenderOperation(op));
}

HttpResponse ApiServerImpl::DeleteNode(const Call& c, const std::string& id) {
  if (const OperationRecord* prior = FindRequestLocked(c, "nodes.delete")) {
    return JsonResponse(RenderOperation(*prior));
  }
  EMULATOR_ASSIGN_OR_RESPOND(EmulatedNode* found, FindIn(c, nodes_, "nodes", id));
  EmulatedNode& n = *found;
  if (n.state == NodeState::kDeleting) {
    return ErrorResponse(BadState("delete", n));
  }
  OperationRecord& op = NewOperationLocked(c, "delete", n.name, "");
  StartDeleteLocked(n, op.name, c.now);
  RememberRequestLocked(c, "nodes.delete", op.name);
  return JsonResponse(RenderOperation(op));
}

HttpResponse ApiServerImpl::StopNode(const Call& c, const std::string& id) {
  EMULATOR_ASSIGN_OR_RESPOND(EmulatedNode* found,
                             SingleWorkerNodeLocked(c, id, "stop", NodeState::kReady));
  EmulatedNode& n = *found;
  OperationRecord& op = NewOperationLocked(c, "stop", n.name, "Node");
  n.state = NodeState::kStopping;
  n.health.clear();
  DropNodeEventsLocked(n);
  NewStepLocked(n, NodeStep::kStop, op.name, config_.timings.stop, c.now);
  PostHostCallLocked(
      n, "Halt", [name = n.name](WorkerHosts& h) { return h.Halt(name); }, Waiter::kStep);
  return JsonResponse(RenderOperation(op));
}

HttpResponse ApiServerImpl::StartNode(const Call& c, const std::string& id) {
  EMULATOR_ASSIGN_OR_RESPOND(EmulatedNode* found,
                             SingleWorkerNodeLocked(c, id, "start", NodeState::kStopped));
  EmulatedNode& n = *found;
  // Capacity is checked while the node is still STOPPED, which holds none: once
  // STARTING it would count its own chips against itself.
  std::optional<RpcError> no_capacity =
      CheckCapacityLocked(n.zone, *n.type.family, n.type.chips, c.now);
  OperationRecord& op = NewOperationLocked(c, "start", n.name, "Node");
  n.state = NodeState::kStarting;
  if (std::optional<RpcError> e = std::move(no_capacity)) {
    NodeStep& s = NewStepLocked(n, NodeStep::kStart, op.name, config_.timings.stockout_fail, c.now);
    s.fail = std::move(*e);
  } else {
    NewStepLocked(n, NodeStep::kStart, op.name, config_.timings.start, c.now);
    PostBootLocked(n, /*new_addresses=*/false, Waiter::kStep);
  }
  return JsonResponse(RenderOperation(op));
}

HttpResponse ApiServerImpl::PatchNode(const Call& c, const std::string& id) {
  EMULATOR_ASSIGN_OR_RESPOND(EmulatedNode* found, FindIn(c, nodes_, "nodes", id));
  EmulatedNode& n = *found;
  // A FieldMask's paths may come in one parameter or in several (updateMask=a&updateMask=b).
  std::string mask = Join(c.req->QueryAll("updateMask"), ",");
  if (Trim(mask).empty()) {
    return ErrorResponse(
        InvalidArgument("Invalid value for field 'update_mask': \"\". An update mask is required "
                        "(e.g. updateMask=labels,metadata)."));
  }
  EMULATOR_ASSIGN_OR_RESPOND(Json canon, ParseBodyAs(c, "Node", "node"));
  const Json& given = canon;
  // Mask paths, in camelCase or snake_case, to the field they replace.
  std::vector<std::string> fields;
  for (std::string path : Split(mask, ',')) {
    path = std::string(Trim(path));
    std::string camel = SnakeToCamel(path);
    if (camel == "description" || camel == "tags" || camel == "labels" || camel == "metadata" ||
        camel == "networkConfig.enableExternalIps") {
      fields.push_back(camel);
    } else {
      return ErrorResponse(
          InvalidArgument("Cloud TPU received a bad request. update_mask path \"" + path +
                          "\" is not supported; supported paths: description, tags, labels, "
                          "metadata, network_config.enable_external_ips " +
                          Eid()));
    }
  }
  if (n.state != NodeState::kReady && n.state != NodeState::kStopped) {
    return ErrorResponse(BadState("update", n));
  }
  if (n.step) {
    return ErrorResponse(Busy(n));
  }
  bool metadata_changed = false;
  for (const std::string& f : fields) {
    if (f == "networkConfig.enableExternalIps") {
      if (given.contains("networkConfig") && given["networkConfig"].contains("enableExternalIps")) {
        n.spec["networkConfig"]["enableExternalIps"] = given["networkConfig"]["enableExternalIps"];
      } else if (n.spec.contains("networkConfig")) {
        n.spec["networkConfig"].erase("enableExternalIps");
      }
      continue;
    }
    Json before = n.spec.contains(f) ? n.spec[f] : Json();
    if (given.contains(f)) {
      n.spec[f] = given[f];
    } else {
      n.spec.erase(f);
    }
    Json after = n.spec.contains(f) ? n.spec[f] : Json();
    if (f == "metadata" && before != after) {
      metadata_changed = true;
    }
  }
  OperationRecord& op = NewOperationLocked(c, "update", n.name, "Node");
  NewStepLocked(n, NodeStep::kUpdate, op.name, config_.timings.update, c.now);
  if (metadata_changed && n.state == NodeState::kReady && !n.workers.empty()) {
    std::map<std::string, std::string> md;
    if (n.spec.contains("metadata")) {
      md = n.spec["metadata"].get<std::map<std::string, std::string>>();
    }
    PostHostCallLocked(
        n, "SetMetadata", [name = n.name, md](WorkerHosts& h) { return h.SetMetadata(name, md); },
        Waiter::kStep);
  }
  return JsonResponse(RenderOperation(op));
}

HttpResponse ApiServerImpl::GetGuestAttributes(const Call& c, const std::string& id) {
  EMULATOR_ASSIGN_OR_RESPOND(EmulatedNode* found, FindIn(c, nodes_, "nodes", id));
  const EmulatedNode& n = *found;
  EMULATOR_ASSIGN_OR_RESPOND(Json req, ParseBodyAs(c, "GetGuestAttributesRequest", ""));
  std::string query_path = req.value("queryPath", std::string());
  std::vector<size_t> workers;
  bool all = true;
  if (req.contains("workerIds")) {
    for (const Json& w : req["workerIds"]) {
      std::string s = w.is_string() ? w.get<std::string>() : w.dump();
      if (s.empty()) {
        continue;  // "" means every worker, as gcloud sends it
      }
      long long idx = -1;
      if (!ParseInt(s, &idx) || idx < 0 || idx >= n.type.workers) {
        return ErrorResponse(InvalidArgument("Cloud TPU received a bad request. worker id \"" + s +
                                             "\" is out of range: " + n.type.name + " has " +
                                             std::to_string(n.type.workers) + " workers " + Eid()));
      }
      all = false;
      workers.push_back(static_cast<size_t>(idx));
    }
  }
  if (all) {
    for (size_t i = 0; i < n.workers.size(); ++i) {
      workers.push_back(i);
    }
  }
  Json out = Json::object();
  Json list = Json::array();
  for (size_t i : workers) {
    if (i >= n.workers.size()) {
      continue;
    }
    const WorkerInfo& w = n.workers[i];
    Json items = Json::array();
    items.push_back(Json{
        {"namespace", "hostkeys"}, {"key", KeyType(w.host_key)}, {"value", KeyBody(w.host_key)}});
    items.push_back(Json{{"key", "hostname"}, {"value", w.hostname}});
    list.push_back(Json{{"queryPath", query_path.empty() ? "/" : query_path},
                        {"queryValue", {{"items", items}}}});
  }
  if (!list.empty()) {
    out["guestAttributes"] = std::move(list);
  }
  return JsonResponse(out);
}

}  // namespace tpufleet::emulator
