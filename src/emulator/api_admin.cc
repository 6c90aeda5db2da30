// The emulator's own admin endpoints (/emulator/v1/…): status, and faults on command.
// Shapes are documented in api_server.h.
#include <algorithm>
#include <cstdio>
#include <set>

#include "emulator/api_internal.h"
#include "util/strings.h"

namespace tpufleet::emulator {
namespace {

// "30s", "1.5s", "0.25s": proto-style durations for the admin JSON.
std::string FormatMillis(Millis d) {
  long long ms = d.count();
  if (ms % 1000 == 0) {
    return std::to_string(ms / 1000) + "s";
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld.%03llds", ms / 1000, ms % 1000);
  std::string s = buf;
  while (s.size() > 2 && s[s.size() - 2] == '0') {
    s.erase(s.size() - 2, 1);
  }
  return s;
}

std::string_view TierName(QuotaTier t) {
  switch (t) {
    case QuotaTier::kAny:
      return "any";
    case QuotaTier::kSpot:
      return "spot";
    case QuotaTier::kOnDemand:
      return "on_demand";
  }
  return "any";
}

}  // namespace

Json ApiServerImpl::RenderFault(const Fault& f) const {
  Json j{{"id", f.id},
         {"kind", std::string(FaultKindName(f.kind))},
         {"createTime", FormatTimestamp(f.created)}};
  if (!f.zone.empty()) {
    j["zone"] = f.zone;
  }
  if (!f.region.empty()) {
    j["region"] = f.region;
  }
  if (!f.family.empty()) {
    j["family"] = f.family;
  }
  if (!f.node.empty()) {
    j["node"] = f.node;
  }
  if (f.kind == FaultKind::kCutOff) {
    j["worker"] = f.worker;
  }
  if (f.kind == FaultKind::kStorm) {
    j["rate"] = f.rate;
    j["httpCodes"] = f.http_codes;
    j["seed"] = f.seed;
  }
  if (f.kind == FaultKind::kSlow) {
    j["factor"] = f.factor;
  }
  if (f.duration) {
    j["duration"] = FormatMillis(*f.duration);
    j["endTime"] = FormatTimestamp(f.created + *f.duration);
  }
  if (f.notice) {
    j["notice"] = FormatMillis(*f.notice);
  }
  return j;
}

RpcOr<Json> ApiServerImpl::AddFaultLocked(Fault f, Clock::MonoTime now, Clock::WallTime wall) {
  if (!f.family.empty() && catalog_.FindFamily(f.family) == nullptr) {
    return InvalidArgument("fault: unknown family \"" + f.family + "\"");
  }
  if (!f.family.empty()) {
    f.family = catalog_.FindFamily(f.family)->name;
  }
  EmulatedNode* node = nullptr;
  if (!f.node.empty()) {
    auto it = nodes_.find(f.node);
    if (it == nodes_.end()) {
      return NotFound(f.node);
    }
    node = &it->second;
  }
  switch (f.kind) {
    case FaultKind::kStockout:
      if (!ZoneKnown(f.zone)) {
        return InvalidArgument("fault: unknown zone \"" + f.zone + "\"" +
                               DidYouMean(f.zone, catalog_.AllZones()));
      }
      break;
    case FaultKind::kQuota: {
      bool known = false;
      for (const std::string& z : catalog_.AllZones()) {
        known = known || RegionOfZone(z) == f.region;
      }
      if (!known) {
        return InvalidArgument("fault: unknown region \"" + f.region + "\"");
      }
      break;
    }
    case FaultKind::kPreempt:
      if (!node->spot) {
        return RpcError{
            RpcCode::kFailedPrecondition,
            "fault: " + f.node + " is not a spot or preemptible node; only those are preempted",
            Json::array()};
      }
      if (node->state != NodeState::kReady || node->preemption) {
        return RpcError{RpcCode::kFailedPrecondition,
                        "fault: " + f.node + " is " + std::string(NodeStateName(node->state)) +
                            (node->preemption ? " and already being preempted" : "") +
                            "; only READY nodes are preempted",
                        Json::array()};
      }
      break;
    case FaultKind::kMaintenance:
      if (node->state != NodeState::kReady || node->maintenance) {
        return RpcError{RpcCode::kFailedPrecondition,
                        "fault: " + f.node + " is " + std::string(NodeStateName(node->state)) +
                            (node->maintenance ? " and already under maintenance" : "") +
                            "; maintenance needs a READY node",
                        Json::array()};
      }
      break;
    case FaultKind::kCutOff:
      if (f.worker < 0 || static_cast<size_t>(f.worker) >= node->workers.size()) {
        return RpcError{RpcCode::kFailedPrecondition,
                        "fault: " + f.node + " has no worker " + std::to_string(f.worker) +
                            " (it has " + std::to_string(node->workers.size()) + " running)",
                        Json::array()};
      }
      break;
    case FaultKind::kStorm:
    case FaultKind::kSlow:
      break;
  }
  std::string id = faults_.Add(f, wall, now);
  const Fault& stored = *faults_.Find(id);
  if (f.kind == FaultKind::kPreempt) {
    Millis notice = f.notice.value_or(config_.timings.preemption_notice);
    node->preemption = NodePreemption{now + notice, id};
    PostHostCallLocked(
        *node, "Notify",
        [name = node->name](WorkerHosts& h) {
          return h.Notify(name, HostEvent::kPreemptionNotice);
        },
        Waiter::kNone);
  } else if (f.kind == FaultKind::kMaintenance) {
    Millis notice = f.notice.value_or(config_.timings.maintenance_notice);
    NodeMaintenance m;
    m.seq = next_seq_++;
    m.due = now + notice;
    m.window_start = wall + notice;
    m.window_end = m.window_start + config_.timings.maintenance;
    m.fault_id = id;
    node->maintenance = m;
    PostHostCallLocked(
        *node, "Notify",
        [name = node->name](WorkerHosts& h) {
          return h.Notify(name, HostEvent::kMaintenanceNotice);
        },
        Waiter::kNone);
  } else if (f.kind == FaultKind::kCutOff) {
    node->cut_off.resize(node->workers.size(), false);
    node->cut_off[static_cast<size_t>(f.worker)] = true;
    PostHostCallLocked(
        *node, "SetCutOff",
        [name = node->name, w = f.worker](WorkerHosts& h) { return h.SetCutOff(name, w, true); },
        Waiter::kNone);
  }
  return RenderFault(stored);
}

void ApiServerImpl::EndFaultLocked(const Fault& f) {
  auto it = f.node.empty() ? nodes_.end() : nodes_.find(f.node);
  if (it == nodes_.end()) {
    return;
  }
  EmulatedNode& n = it->second;
  switch (f.kind) {
    case FaultKind::kCutOff:
      if (static_cast<size_t>(f.worker) < n.cut_off.size()) {
        n.cut_off[static_cast<size_t>(f.worker)] = false;
      }
      PostHostCallLocked(
          n, "SetCutOff",
          [name = n.name, w = f.worker](WorkerHosts& h) { return h.SetCutOff(name, w, false); },
          Waiter::kNone);
      break;
    case FaultKind::kPreempt:
      // Called off before it happened (the notice, once given, stays given).
      if (n.preemption && n.preemption->fault_id == f.id) {
        n.preemption.reset();
      }
      break;
    case FaultKind::kMaintenance:
      if (n.maintenance && n.maintenance->fault_id == f.id &&
          n.maintenance->phase == NodeMaintenance::kNotice) {
        n.maintenance.reset();
      }
      break;
    default:
      break;
  }
}

Json ApiServerImpl::StatusLocked() {
  Json nodes = Json::array();
  for (const auto& [name, n] : nodes_) {
    Json workers = Json::array();
    for (size_t i = 0; i < n.workers.size(); ++i) {
      workers.push_back(Json{{"index", i},
                             {"address", n.workers[i].address},
                             {"hostname", n.workers[i].hostname},
                             {"hostKey", n.workers[i].host_key},
                             {"cutOff", i < n.cut_off.size() && n.cut_off[i]}});
    }
    Json j{{"name", name},
           {"state", std::string(NodeStateName(n.state))},
           {"acceleratorType", n.type.name},
           {"chips", n.type.chips},
           {"spot", n.spot},
           {"workers", workers}};
    if (!n.health.empty()) {
      j["health"] = n.health;
    }
    if (!n.queued_resource.empty()) {
      j["queuedResource"] = n.queued_resource;
    }
    if (n.step && !n.step->op.empty()) {
      j["operation"] = n.step->op;
    }
    if (n.preemption) {
      j["preemptionPending"] = true;
    }
    if (n.maintenance) {
      j["maintenance"] = n.maintenance->phase == NodeMaintenance::kNotice ? "PENDING" : "ONGOING";
    }
    nodes.push_back(std::move(j));
  }
  Json qrs = Json::array();
  for (const auto& [name, q] : qrs_) {
    Json plan = Json::array();
    for (const NodePlan& p : q.plan) {
      plan.push_back(p.name);
    }
    qrs.push_back(
        Json{{"name", name}, {"state", std::string(QrStateName(q.state))}, {"nodes", plan}});
  }
  Json faults = Json::array();
  for (const Fault& f : faults_.faults()) {
    faults.push_back(RenderFault(f));
  }
  Json capacity = Json::array();
  std::set<std::pair<std::string, const Family*>> seen;
  for (const auto& [name, n] : nodes_) {
    seen.insert({n.zone, n.type.family});
  }
  for (const CapacityLimit& l : config_.capacity) {
    seen.insert({l.zone, catalog_.FindFamily(l.family)});
  }
  for (const auto& [zone, family] : seen) {
    if (family == nullptr) {
      continue;
    }
    capacity.push_back(Json{{"zone", zone},
                            {"family", family->name},
                            {"chipsInUse", CapacityUsedLocked(zone, *family)},
                            {"chipsLimit", CapacityLimitOf(zone, *family)}});
  }
  Json quota = Json::array();
  for (const QuotaLimit& l : config_.quota) {
    quota.push_back(Json{{"region", l.region},
                         {"family", l.family},
                         {"tier", std::string(TierName(l.tier))},
                         {"chipsInUse", QuotaUsedLocked(l)},
                         {"chipsLimit", l.chips}});
  }
  size_t pending = 0;
  for (const auto& [name, op] : ops_) {
    pending += op.done ? 0 : 1;
  }
  return Json{{"now", FormatTimestamp(clock_.Now())},
              {"nodes", nodes},
              {"queuedResources", qrs},
              {"faults", faults},
              {"usage", {{"capacity", capacity}, {"quota", quota}}},
              {"operations", {{"total", ops_.size()}, {"pending", pending}}},
              {"hostWorkPending", work_.size()}};
}

std::string ApiServerImpl::StatusJson() {
  std::lock_guard<std::mutex> l(mu_);
  AdvanceLocked(clock_.MonotonicNow(), clock_.Now());
  return StatusLocked().dump(2) + "\n";
}

void ApiServerImpl::DestroyAllHosts() {
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [name, n] : nodes_) {
    PostHostCallLocked(
        n, "Destroy", [name = n.name](WorkerHosts& h) { return h.Destroy(name); }, Waiter::kNone);
  }
}

HttpResponse ApiServerImpl::HandleAdmin(const HttpRequest& req) {
  std::lock_guard<std::mutex> l(mu_);
  Clock::MonoTime now = clock_.MonotonicNow();
  Clock::WallTime wall = clock_.Now();
  AdvanceLocked(now, wall);
  std::string path = req.path;
  while (path.size() > 1 && path.back() == '/') {
    path.pop_back();
  }
  const std::string kFaults = "/emulator/v1/faults";
  if (path == "/emulator/v1/status" && req.method == "GET") {
    return JsonResponse(StatusLocked());
  }
  if (path == kFaults) {
    if (req.method == "GET") {
      Json list = Json::array();
      for (const Fault& f : faults_.faults()) {
        list.push_back(RenderFault(f));
      }
      return JsonResponse(Json{{"faults", list}});
    }
    if (req.method == "POST") {
      Result<Fault> f = ParseFault(req.body);
      if (!f.ok()) {
        return ErrorResponse(InvalidArgument(f.status().message()));
      }
      RpcOr<Json> added = AddFaultLocked(std::move(f).value(), now, wall);
      return added.ok() ? JsonResponse(added.value()) : ErrorResponse(added.error());
    }
    if (req.method == "DELETE") {
      std::vector<Fault> cleared = faults_.Clear();
      for (const Fault& f : cleared) {
        EndFaultLocked(f);
      }
      return JsonResponse(Json{{"cleared", cleared.size()}});
    }
  } else if (StartsWith(path, kFaults + "/")) {
    std::string id = path.substr(kFaults.size() + 1);
    if (req.method == "GET") {
      const Fault* f = faults_.Find(id);
      return f != nullptr ? JsonResponse(RenderFault(*f)) : ErrorResponse(NotFound("faults/" + id));
    }
    if (req.method == "DELETE") {
      std::optional<Fault> f = faults_.Remove(id);
      if (!f) {
        return ErrorResponse(NotFound("faults/" + id));
      }
      EndFaultLocked(*f);
      return JsonResponse(Json::object());
    }
  }
  return ErrorResponse({RpcCode::kNotFound,
                        "No admin endpoint " + req.method + " " + req.path +
                            " (see GET /emulator/v1/status, /emulator/v1/faults)",
                        Json::array()});
}

}  // namespace tpufleet::emulator
