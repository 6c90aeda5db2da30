#include "emulator/schema.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <vector>

#include "util/strings.h"

namespace tpufleet::emulator {
namespace {

enum class Kind {
  kString,
  kBool,
  kInt,    // int32: a JSON number or a decimal string
  kInt64,  // int64: the same, beyond int32 (proto3 JSON writes it as a string)
  kEnum,   // by name, one of `enums`
  kStringList,
  kStringMap,  // map<string, string>: labels, metadata
  kMessage,    // `type` names it
  kMessages,   // repeated message
  kObject,     // a message whose parts the emulator keeps as given (trafficConfig)
  kOpaque,     // output-only structures: accepted as they are
};

// The versions a field is part of.
enum Versions : unsigned { kV2 = 1, kAlpha = 2, kBoth = kV2 | kAlpha };

struct FieldDef {
  std::string_view name;  // lowerCamel, as the version spells it on the wire
  Kind kind;
  std::string_view type = {};            // kMessage(s)
  unsigned versions = kBoth;             // where the field exists
  std::string_view stored = {};          // the name it is kept under, when not `name`
  std::span<const std::string_view> enums = {};  // kEnum
  std::string_view Stored() const { return stored.empty() ? name : stored; }
};

constexpr std::string_view kNodeProvisioningModels[] = {
    "PROVISIONING_MODEL_UNSPECIFIED", "STANDARD", "SPOT", "RESERVATION_BOUND"};
constexpr std::string_view kQrProvisioningModels[] = {
    "PROVISIONING_MODEL_UNSPECIFIED", "STANDARD", "SPOT", "RESERVATION_BOUND", "FLEX_START"};
constexpr std::string_view kWorkloadTypes[] = {"WORKLOAD_TYPE_UNSPECIFIED",
                                               "THROUGHPUT_OPTIMIZED", "AVAILABILITY_OPTIMIZED"};

// From tpu-v2-discovery.json `schemas` (the writable fields and the output-only ones a
// client may echo back), and the alpha-only ones of gcloud 528's v2alpha1 messages.
const std::map<std::string_view, std::vector<FieldDef>>& Schemas() {
  static const auto* kSchemas = new std::map<std::string_view, std::vector<FieldDef>>{
      {"Node",
       {{"name", Kind::kString},
        {"description", Kind::kString},
        {"acceleratorType", Kind::kString},
        {"acceleratorConfig", Kind::kMessage, "AcceleratorConfig"},
        {"runtimeVersion", Kind::kString},
        {"state", Kind::kOpaque},
        {"health", Kind::kOpaque},
        {"healthDescription", Kind::kString},
        {"networkConfig", Kind::kMessage, "NetworkConfig"},
        {"networkConfigs", Kind::kMessages, "NetworkConfig"},
        {"cidrBlock", Kind::kString},
        {"serviceAccount", Kind::kMessage, "ServiceAccount"},
        {"createTime", Kind::kString},
        {"schedulingConfig", Kind::kMessage, "SchedulingConfig"},
        {"networkEndpoints", Kind::kOpaque},
        {"labels", Kind::kStringMap},
        {"metadata", Kind::kStringMap},
        {"tags", Kind::kStringList},
        {"id", Kind::kOpaque},
        {"dataDisks", Kind::kMessages, "AttachedDisk"},
        {"apiVersion", Kind::kOpaque},
        {"symptoms", Kind::kOpaque},
        {"shieldedInstanceConfig", Kind::kMessage, "ShieldedInstanceConfig"},
        {"queuedResource", Kind::kString},
        {"multisliceNode", Kind::kOpaque},
        {"bootDiskConfig", Kind::kMessage, "BootDiskConfig"},
        {"upcomingMaintenance", Kind::kOpaque},
        {"autocheckpointEnabled", Kind::kBool, {}, kAlpha}}},
      {"AcceleratorConfig", {{"type", Kind::kOpaque}, {"topology", Kind::kString}}},
      {"NetworkConfig",
       {{"network", Kind::kString},
        {"subnetwork", Kind::kString},
        {"enableExternalIps", Kind::kBool},
        {"canIpForward", Kind::kBool},
        {"queueCount", Kind::kInt}}},
      {"ServiceAccount", {{"email", Kind::kString}, {"scope", Kind::kStringList}}},
      {"SchedulingConfig",
       {{"preemptible", Kind::kBool},
        {"reserved", Kind::kBool},
        {"spot", Kind::kBool},
        {"provisioningModel", Kind::kEnum, {}, kAlpha, {}, kNodeProvisioningModels},
        {"reservationName", Kind::kString, {}, kAlpha},
        {"terminationTimestamp", Kind::kString, {}, kAlpha}}},
      {"AttachedDisk",
       {{"sourceDisk", Kind::kString},
        {"mode", Kind::kOpaque},
        {"workerIds", Kind::kStringList, {}, kAlpha}}},
      {"ShieldedInstanceConfig", {{"enableSecureBoot", Kind::kBool}}},
      {"BootDiskConfig",
       {{"customerEncryptionKey", Kind::kMessage, "CustomerEncryptionKey"},
        {"diskSizeGb", Kind::kInt64, {}, kAlpha},
        {"enableConfidentialCompute", Kind::kBool, {}, kAlpha},
        {"provisionedIops", Kind::kInt64, {}, kAlpha},
        {"provisionedThroughput", Kind::kInt64, {}, kAlpha},
        {"sourceImage", Kind::kString, {}, kAlpha}}},
      {"CustomerEncryptionKey", {{"kmsKeyName", Kind::kString}}},
      {"QueuedResource",
       {{"name", Kind::kString},
        {"createTime", Kind::kString},
        {"tpu", Kind::kMessage, "Tpu"},
        {"spot", Kind::kMessage, "Spot"},
        {"guaranteed", Kind::kMessage, "Guaranteed"},
        {"queueingPolicy", Kind::kMessage, "QueueingPolicy"},
        {"reservationName", Kind::kString},
        {"state", Kind::kOpaque},
        {"bestEffort", Kind::kMessage, "BestEffort", kAlpha},
        {"provisioningModel", Kind::kEnum, {}, kAlpha, {}, kQrProvisioningModels},
        {"runDuration", Kind::kMessage, "RunDuration", kAlpha},
        {"trafficConfig", Kind::kObject, {}, kAlpha}}},
      {"Tpu", {{"nodeSpec", Kind::kMessages, "NodeSpec"}}},
      {"NodeSpec",
       {{"parent", Kind::kString},
        {"nodeId", Kind::kString},
        {"multisliceParams", Kind::kMessage, "MultisliceParams", kV2},
        {"multiNodeParams", Kind::kMessage, "MultisliceParams", kAlpha, "multisliceParams"},
        {"node", Kind::kMessage, "Node"}}},
      {"MultisliceParams",
       {{"nodeCount", Kind::kInt},
        {"nodeIdPrefix", Kind::kString},
        {"workloadType", Kind::kEnum, {}, kAlpha, {}, kWorkloadTypes}}},
      {"Spot", {}},
      {"BestEffort", {}},
      {"Guaranteed", {{"minDuration", Kind::kString}, {"reserved", Kind::kBool, {}, kAlpha}}},
      {"RunDuration",
       {{"maxRunDuration", Kind::kString, {}, kAlpha},
        {"terminationTime", Kind::kString, {}, kAlpha}}},
      {"QueueingPolicy",
       {{"validUntilDuration", Kind::kString},
        {"validUntilTime", Kind::kString},
        {"validAfterDuration", Kind::kString},
        {"validAfterTime", Kind::kString},
        {"validInterval", Kind::kMessage, "Interval"}}},
      {"Interval", {{"startTime", Kind::kString}, {"endTime", Kind::kString}}},
      {"GetGuestAttributesRequest",
       {{"queryPath", Kind::kString}, {"workerIds", Kind::kStringList}}},
  };
  return *kSchemas;
}

unsigned VersionBit(std::string_view version) {
  return version == "v2alpha1" ? kAlpha : kV2;
}

std::string FieldPath(std::string_view at, std::string_view field) {
  std::string snake = CamelToSnake(field);
  return at.empty() ? snake : std::string(at) + "." + snake;
}

RpcError BadValue(const std::string& path, std::string_view proto_type, const Json& v) {
  return InvalidArgument("Invalid value at '" + path + "' (" + std::string(proto_type) + "), " +
                         v.dump());
}

RpcOr<Json> CanonicalizeMessage(const Json& in, std::string_view type, const std::string& at,
                                unsigned version, int depth);

RpcOr<Json> CanonicalizeField(const FieldDef& def, const Json& v, const std::string& path,
                              unsigned version, int depth) {
  switch (def.kind) {
    case Kind::kString:
      if (!v.is_string()) {
        return BadValue(path, "TYPE_STRING", v);
      }
      return v;
    case Kind::kBool:
      if (!v.is_boolean()) {
        return BadValue(path, "TYPE_BOOL", v);
      }
      return v;
    case Kind::kInt: {
      // int32, as every integer field of these messages is; an unsigned JSON number
      // above int64 would otherwise read back negative.
      auto int32 = [](long long x) {
        return x >= std::numeric_limits<int32_t>::min() && x <= std::numeric_limits<int32_t>::max();
      };
      long long n = 0;
      if (v.is_number_unsigned()) {
        if (v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
          return v;
        }
      } else if (v.is_number_integer()) {
        if (int32(v.get<long long>())) {
          return v;
        }
      } else if (v.is_string() && ParseInt(v.get<std::string>(), &n) && int32(n)) {
        return Json(n);
      }
      return BadValue(path, "TYPE_INT32", v);
    }
    case Kind::kInt64: {
      long long n = 0;
      if (v.is_number_integer() &&
          (!v.is_number_unsigned() ||
           v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))) {
        return Json(v.get<long long>());
      }
      if (v.is_string() && ParseInt(v.get<std::string>(), &n)) {
        return Json(n);
      }
      return BadValue(path, "TYPE_INT64", v);
    }
    case Kind::kEnum:
      if (v.is_string() &&
          std::find(def.enums.begin(), def.enums.end(), v.get<std::string>()) != def.enums.end()) {
        return v;
      }
      return BadValue(path, "TYPE_ENUM", v);
    case Kind::kObject:
      if (!v.is_object()) {
        return InvalidArgument("Invalid JSON payload received. Expected an object at '" + path +
                               "'.");
      }
      return v;
    case Kind::kStringList: {
      if (!v.is_array()) {
        return BadValue(path, "TYPE_STRING", v);
      }
      for (const Json& e : v) {
        if (!e.is_string()) {
          return BadValue(path, "TYPE_STRING", e);
        }
      }
      return v;
    }
    case Kind::kStringMap: {
      if (!v.is_object()) {
        return InvalidArgument("Invalid JSON payload received. Expected an object at '" + path +
                               "'.");
      }
      for (const auto& [k, e] : v.items()) {
        if (!e.is_string()) {
          return BadValue(path + "[" + k + "]", "TYPE_STRING", e);
        }
      }
      return v;
    }
    case Kind::kMessage:
      return CanonicalizeMessage(v, def.type, path, version, depth + 1);
    case Kind::kMessages: {
      if (!v.is_array()) {
        return InvalidArgument("Invalid JSON payload received. Expected a list at '" + path + "'.");
      }
      Json out = Json::array();
      for (size_t i = 0; i < v.size(); ++i) {
        RpcOr<Json> e = CanonicalizeMessage(v[i], def.type, path + "[" + std::to_string(i) + "]",
                                            version, depth + 1);
        if (!e.ok()) {
          return e;
        }
        out.push_back(std::move(e.value()));
      }
      return out;
    }
    case Kind::kOpaque:
      return v;
  }
  return v;
}

// The field of `fields` that `version` spells `camel`, or null.
const FieldDef* FindField(const std::vector<FieldDef>& fields, std::string_view camel,
                          unsigned version) {
  for (const FieldDef& f : fields) {
    if (f.name == camel && (f.versions & version) != 0) {
      return &f;
    }
  }
  return nullptr;
}

RpcOr<Json> CanonicalizeMessage(const Json& in, std::string_view type, const std::string& at,
                                unsigned version, int depth) {
  // Nesting deeper than any TPU message: a hostile body, not a request.
  constexpr int kMaxDepth = 16;
  if (depth > kMaxDepth) {
    return InvalidArgument("Invalid JSON payload received. Too deeply nested.");
  }
  if (!in.is_object()) {
    return InvalidArgument("Invalid JSON payload received. Expected an object at '" + at + "'.");
  }
  const std::vector<FieldDef>& fields = Schemas().at(type);
  Json out = Json::object();
  for (const auto& [key, value] : in.items()) {
    std::string camel = SnakeToCamel(key);
    const FieldDef* def = FindField(fields, camel, version);
    if (def == nullptr) {
      return InvalidArgument("Invalid JSON payload received. Unknown name \"" + key + "\"" +
                             (at.empty() ? std::string() : " at '" + at + "'") +
                             ": Cannot find field.");
    }
    if (value.is_null()) {
      continue;
    }
    RpcOr<Json> v = CanonicalizeField(*def, value, FieldPath(at, camel), version, depth);
    if (!v.ok()) {
      return v;
    }
    out[std::string(def->Stored())] = std::move(v.value());
  }
  return out;
}

Json MessageForVersion(const Json& stored, std::string_view type, unsigned version) {
  if (!stored.is_object()) {
    return stored;
  }
  const std::vector<FieldDef>& fields = Schemas().at(type);
  Json out = Json::object();
  for (const auto& [key, value] : stored.items()) {
    const FieldDef* def = nullptr;
    for (const FieldDef& f : fields) {
      if (f.Stored() == key && (f.versions & version) != 0) {
        def = &f;
        break;
      }
    }
    if (def == nullptr) {
      continue;  // a field of another version
    }
    Json& v = out[std::string(def->name)];
    if (def->kind == Kind::kMessage) {
      v = MessageForVersion(value, def->type, version);
    } else if (def->kind == Kind::kMessages && value.is_array()) {
      v = Json::array();
      for (const Json& e : value) {
        v.push_back(MessageForVersion(e, def->type, version));
      }
    } else {
      v = value;
    }
  }
  return out;
}

}  // namespace

RpcOr<Json> Canonicalize(const Json& in, std::string_view type, std::string_view at,
                         std::string_view version) {
  return CanonicalizeMessage(in, type, std::string(at), VersionBit(version), 0);
}

Json ForVersion(const Json& stored, std::string_view type, std::string_view version) {
  return MessageForVersion(stored, type, VersionBit(version));
}

std::string SnakeToCamel(std::string_view name) {
  std::string out;
  bool upper = false;
  for (char ch : name) {
    if (ch == '_') {
      upper = true;
    } else if (upper && ch >= 'a' && ch <= 'z') {
      out += static_cast<char>(ch - 'a' + 'A');
      upper = false;
    } else {
      out += ch;
      upper = false;
    }
  }
  return out;
}

std::string CamelToSnake(std::string_view name) {
  std::string out;
  for (char ch : name) {
    if (ch >= 'A' && ch <= 'Z') {
      out += '_';
      out += static_cast<char>(ch - 'A' + 'a');
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace tpufleet::emulator
