#include "api/emulator.h"

#include <initializer_list>
#include <utility>
#include <variant>

#include "api/json_internal.h"

namespace tpufleet::api {
namespace {

using internal::ArrayOf;
using internal::Dump;
using internal::kDocumentIndent;
using nlohmann::json;

json DaemonJson(const EmulatorDaemon& d) {
  if (!d.running) {
    return {{"running", false}, {"state_dir", d.state_dir}};
  }
  return {{"running", true},
          {"pid", d.pid},
          {"endpoint", d.endpoint},
          {"token_file", d.token_file},
          {"state_dir", d.state_dir}};
}

// Sets j[key] to `value` unless it is empty.
void SetIfAny(json& j, const char* key, const std::string& value) {
  if (!value.empty()) {
    j[key] = value;
  }
}

json FaultJson(const EmulatorFault& f) {
  json j{{"id", f.id}, {"kind", f.kind}, {"createTime", f.create_time}};
  SetIfAny(j, "zone", f.zone);
  SetIfAny(j, "region", f.region);
  SetIfAny(j, "family", f.family);
  SetIfAny(j, "node", f.node);
  if (f.worker) {
    j["worker"] = *f.worker;
  }
  if (f.device) {
    j["device"] = *f.device;
  }
  if (f.storm) {
    j["rate"] = f.storm->rate;
    j["httpCodes"] = f.storm->http_codes;
    j["seed"] = f.storm->seed;
  }
  if (f.factor) {
    j["factor"] = *f.factor;
  }
  if (f.duration) {
    j["duration"] = *f.duration;
  }
  if (f.end_time) {
    j["endTime"] = *f.end_time;
  }
  if (f.notice) {
    j["notice"] = *f.notice;
  }
  return j;
}

json NodeJson(const EmulatorNode& n) {
  json workers = json::array();
  for (const EmulatorWorker& w : n.workers) {
    workers.push_back(json{{"index", w.index},
                           {"address", w.address},
                           {"hostname", w.hostname},
                           {"hostKey", w.host_key},
                           {"cutOff", w.cut_off},
                           {"devices", w.devices}});
  }
  json j{{"name", n.name},
         {"state", n.state},
         {"acceleratorType", n.accelerator_type},
         {"chips", n.chips},
         {"spot", n.spot},
         {"workers", workers}};
  SetIfAny(j, "health", n.health);
  SetIfAny(j, "queuedResource", n.queued_resource);
  SetIfAny(j, "operation", n.operation);
  if (n.preemption_pending) {
    j["preemptionPending"] = true;
  }
  SetIfAny(j, "maintenance", n.maintenance);
  return j;
}

json UsageJson(const EmulatorUsage& u) {
  json j{{"family", u.family}, {"chipsInUse", u.chips_in_use}, {"chipsLimit", u.chips_limit}};
  SetIfAny(j, "zone", u.zone);
  SetIfAny(j, "region", u.region);
  SetIfAny(j, "tier", u.tier);
  return j;
}

// --- reading the admin API's status back -------------------------------------------

// Where a field of a JSON object goes.
using Target = std::variant<std::string*, int*, bool*, long long*, uint64_t*, double*,
                            std::vector<int>*, std::vector<std::string>*, std::optional<int>*,
                            std::optional<double>*, std::optional<std::string>*>;

template <typename T>
void Assign(const json& value, T* out) {
  *out = value.get<T>();
}
template <typename T>
void Assign(const json& value, std::optional<T>* out) {
  *out = value.get<T>();
}

// Reads each key of `fields` that `j` has (and is not null) into its target; an
// error names the first key whose value has another type.
Status ReadFields(const json& j, std::initializer_list<std::pair<const char*, Target>> fields) {
  for (const auto& [key, target] : fields) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
      continue;
    }
    try {
      std::visit([&](auto* out) { Assign(*it, out); }, target);
    } catch (const json::exception&) {
      return InvalidArgumentError(std::string("emulator status: \"") + key + "\" is " +
                                  it->type_name());
    }
  }
  return Status::Ok();
}

// The array `key` of `j`, each element read by `read`.
template <typename T, typename F>
Result<std::vector<T>> Items(const json& j, const char* key, F read) {
  std::vector<T> out;
  auto it = j.find(key);
  if (it == j.end()) {
    return out;
  }
  if (!it->is_array()) {
    return InvalidArgumentError(std::string("emulator status: \"") + key + "\" is not a list");
  }
  for (const json& item : *it) {
    if (!item.is_object()) {
      return InvalidArgumentError(std::string("emulator status: an entry of \"") + key +
                                  "\" is not an object");
    }
    TPUFLEET_ASSIGN_OR_RETURN(T value, read(item));
    out.push_back(std::move(value));
  }
  return out;
}

Result<EmulatorWorker> ReadWorker(const json& j) {
  EmulatorWorker w;
  TPUFLEET_TRY(ReadFields(j, {{"index", &w.index}, {"address", &w.address},
                              {"hostname", &w.hostname}, {"hostKey", &w.host_key},
                              {"cutOff", &w.cut_off}, {"devices", &w.devices}}));
  return w;
}

Result<EmulatorNode> ReadNode(const json& j) {
  EmulatorNode n;
  TPUFLEET_TRY(ReadFields(
      j, {{"name", &n.name}, {"state", &n.state}, {"acceleratorType", &n.accelerator_type},
          {"chips", &n.chips}, {"spot", &n.spot}, {"health", &n.health},
          {"queuedResource", &n.queued_resource}, {"operation", &n.operation},
          {"preemptionPending", &n.preemption_pending}, {"maintenance", &n.maintenance}}));
  TPUFLEET_ASSIGN_OR_RETURN(n.workers, Items<EmulatorWorker>(j, "workers", ReadWorker));
  return n;
}

Result<EmulatorQueuedResource> ReadQueuedResource(const json& j) {
  EmulatorQueuedResource q;
  TPUFLEET_TRY(ReadFields(j, {{"name", &q.name}, {"state", &q.state}, {"nodes", &q.nodes}}));
  return q;
}

Result<EmulatorFault> ReadFault(const json& j) {
  EmulatorFault f;
  TPUFLEET_TRY(ReadFields(
      j, {{"id", &f.id}, {"kind", &f.kind}, {"createTime", &f.create_time}, {"zone", &f.zone},
          {"region", &f.region}, {"family", &f.family}, {"node", &f.node}, {"worker", &f.worker},
          {"device", &f.device},
          {"factor", &f.factor}, {"duration", &f.duration}, {"endTime", &f.end_time},
          {"notice", &f.notice}}));
  if (j.contains("rate")) {
    EmulatorFault::Storm& storm = f.storm.emplace();
    TPUFLEET_TRY(ReadFields(
        j, {{"rate", &storm.rate}, {"httpCodes", &storm.http_codes}, {"seed", &storm.seed}}));
  }
  return f;
}

Result<EmulatorUsage> ReadUsage(const json& j) {
  EmulatorUsage u;
  TPUFLEET_TRY(ReadFields(j, {{"zone", &u.zone}, {"region", &u.region}, {"tier", &u.tier},
                              {"family", &u.family}, {"chipsInUse", &u.chips_in_use},
                              {"chipsLimit", &u.chips_limit}}));
  return u;
}

}  // namespace

std::string ToJson(const EmulatorDaemon& daemon) {
  return Dump(DaemonJson(daemon), kDocumentIndent);
}

std::string ToJson(const EmulatorStopped& stopped) {
  return Dump(json{{"stopped", stopped.stopped}, {"state_dir", stopped.state_dir}}, kDocumentIndent);
}

std::string ToJson(const EmulatorFault& fault) {
  return Dump(FaultJson(fault), kDocumentIndent);
}

std::string ToJsonLine(const EmulatorFault& fault) {
  return Dump(FaultJson(fault), -1);
}

std::string ToJson(const std::vector<EmulatorFault>& faults) {
  return Dump(json{{"faults", ArrayOf(faults, FaultJson)}}, kDocumentIndent);
}

std::string ToJson(const EmulatorStatus& s) {
  json j{{"now", s.now},
         {"nodes", ArrayOf(s.nodes, NodeJson)},
         {"queuedResources", ArrayOf(s.queued_resources,
                                      [](const EmulatorQueuedResource& q) {
                                        return json{{"name", q.name},
                                                    {"state", q.state},
                                                    {"nodes", q.nodes}};
                                      })},
         {"faults", ArrayOf(s.faults, FaultJson)},
         {"usage",
          {{"capacity", ArrayOf(s.capacity, UsageJson)}, {"quota", ArrayOf(s.quota, UsageJson)}}},
         {"operations", {{"total", s.operations_total}, {"pending", s.operations_pending}}},
         {"hostWorkPending", s.host_work_pending}};
  if (s.daemon) {
    j.update(DaemonJson(*s.daemon));
  }
  return Dump(j, kDocumentIndent);
}

Result<EmulatorStatus> ParseEmulatorStatus(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    return InvalidArgumentError("emulator status: not a JSON object");
  }
  EmulatorStatus s;
  TPUFLEET_TRY(ReadFields(j, {{"now", &s.now}, {"hostWorkPending", &s.host_work_pending}}));
  TPUFLEET_ASSIGN_OR_RETURN(s.nodes, Items<EmulatorNode>(j, "nodes", ReadNode));
  TPUFLEET_ASSIGN_OR_RETURN(s.queued_resources,
                            Items<EmulatorQueuedResource>(j, "queuedResources", ReadQueuedResource));
  TPUFLEET_ASSIGN_OR_RETURN(s.faults, Items<EmulatorFault>(j, "faults", ReadFault));
  json usage = j.value("usage", json::object());
  json operations = j.value("operations", json::object());
  if (!usage.is_object() || !operations.is_object()) {
    return InvalidArgumentError("emulator status: \"usage\" and \"operations\" must be objects");
  }
  TPUFLEET_ASSIGN_OR_RETURN(s.capacity, Items<EmulatorUsage>(usage, "capacity", ReadUsage));
  TPUFLEET_ASSIGN_OR_RETURN(s.quota, Items<EmulatorUsage>(usage, "quota", ReadUsage));
  TPUFLEET_TRY(ReadFields(operations, {{"total", &s.operations_total},
                                        {"pending", &s.operations_pending}}));
  return s;
}

}  // namespace tpufleet::api
