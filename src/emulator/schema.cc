#include "emulator/schema.h"

#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "util/strings.h"

namespace tpufleet::emulator {
namespace {

enum class Kind {
  kString,
  kBool,
  kInt,
  kStringList,
  kStringMap,  // map<string, string>: labels, metadata
  kMessage,    // `type` names it
  kMessages,   // repeated message
  kOpaque,     // output-only structures: accepted as they are
};

struct FieldDef {
  std::string_view name;  // lowerCamel
  Kind kind;
  std::string_view type = {};
};

// From tpu-v2-discovery.json `schemas` (the writable fields and the output-only ones a
// client may echo back).
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
        {"upcomingMaintenance", Kind::kOpaque}}},
      {"AcceleratorConfig", {{"type", Kind::kOpaque}, {"topology", Kind::kString}}},
      {"NetworkConfig",
       {{"network", Kind::kString},
        {"subnetwork", Kind::kString},
        {"enableExternalIps", Kind::kBool},
        {"canIpForward", Kind::kBool},
        {"queueCount", Kind::kInt}}},
      {"ServiceAccount", {{"email", Kind::kString}, {"scope", Kind::kStringList}}},
      {"SchedulingConfig",
       {{"preemptible", Kind::kBool}, {"reserved", Kind::kBool}, {"spot", Kind::kBool}}},
      {"AttachedDisk", {{"sourceDisk", Kind::kString}, {"mode", Kind::kOpaque}}},
      {"ShieldedInstanceConfig", {{"enableSecureBoot", Kind::kBool}}},
      {"BootDiskConfig", {{"customerEncryptionKey", Kind::kMessage, "CustomerEncryptionKey"}}},
      {"CustomerEncryptionKey", {{"kmsKeyName", Kind::kString}}},
      {"QueuedResource",
       {{"name", Kind::kString},
        {"createTime", Kind::kString},
        {"tpu", Kind::kMessage, "Tpu"},
        {"spot", Kind::kMessage, "Spot"},
        {"guaranteed", Kind::kMessage, "Guaranteed"},
        {"queueingPolicy", Kind::kMessage, "QueueingPolicy"},
        {"reservationName", Kind::kString},
        {"state", Kind::kOpaque}}},
      {"Tpu", {{"nodeSpec", Kind::kMessages, "NodeSpec"}}},
      {"NodeSpec",
       {{"parent", Kind::kString},
        {"nodeId", Kind::kString},
        {"multisliceParams", Kind::kMessage, "MultisliceParams"},
        {"node", Kind::kMessage, "Node"}}},
      {"MultisliceParams", {{"nodeCount", Kind::kInt}, {"nodeIdPrefix", Kind::kString}}},
      {"Spot", {}},
      {"Guaranteed", {{"minDuration", Kind::kString}}},
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

std::string FieldPath(std::string_view at, std::string_view field) {
  std::string snake = CamelToSnake(field);
  return at.empty() ? snake : std::string(at) + "." + snake;
}

RpcError BadValue(const std::string& path, std::string_view proto_type, const Json& v) {
  return InvalidArgument("Invalid value at '" + path + "' (" + std::string(proto_type) + "), " +
                         v.dump());
}

RpcOr<Json> CanonicalizeMessage(const Json& in, std::string_view type, const std::string& at,
                                int depth);

RpcOr<Json> CanonicalizeField(const FieldDef& def, const Json& v, const std::string& path,
                              int depth) {
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
      return CanonicalizeMessage(v, def.type, path, depth + 1);
    case Kind::kMessages: {
      if (!v.is_array()) {
        return InvalidArgument("Invalid JSON payload received. Expected a list at '" + path + "'.");
      }
      Json out = Json::array();
      for (size_t i = 0; i < v.size(); ++i) {
        RpcOr<Json> e =
            CanonicalizeMessage(v[i], def.type, path + "[" + std::to_string(i) + "]", depth + 1);
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

RpcOr<Json> CanonicalizeMessage(const Json& in, std::string_view type, const std::string& at,
                                int depth) {
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
    const FieldDef* def = nullptr;
    for (const FieldDef& f : fields) {
      if (f.name == camel) {
        def = &f;
        break;
      }
    }
    if (def == nullptr) {
      return InvalidArgument("Invalid JSON payload received. Unknown name \"" + key + "\"" +
                             (at.empty() ? std::string() : " at '" + at + "'") +
                             ": Cannot find field.");
    }
    if (value.is_null()) {
      continue;
    }
    RpcOr<Json> v = CanonicalizeField(*def, value, FieldPath(at, camel), depth);
    if (!v.ok()) {
      return v;
    }
    out[camel] = std::move(v.value());
  }
  return out;
}

}  // namespace

RpcOr<Json> Canonicalize(const Json& in, std::string_view type, std::string_view at) {
  return CanonicalizeMessage(in, type, std::string(at), 0);
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
