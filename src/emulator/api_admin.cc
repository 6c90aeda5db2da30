// The emulator's own admin endpoints (/emulator/v1/…): status, and faults on command.
// Shapes are documented in api_server.h.
#include <algorithm>
#include <cstdio>
#include <set>

#include "emulator/api_internal.h"
#include "util/log.h"
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

// The chips of `node`'s worker `worker` that device faults have taken away.
std::set<int> RemovedDevices(const FaultSet& faults, const std::string& node, int worker) {
  std::set<int> out;
  for (const Fault& f : faults.faults()) {
    if (f.kind == FaultKind::kDevice && f.node == node && f.worker == worker) {
      out.insert(f.device);
    }
  }
  return out;
}

}  // namespace

api::EmulatorFault ApiServerImpl::RenderFault(const Fault& f) const {
  api::EmulatorFault j;
  j.id = f.id;
  j.kind = FaultKindName(f.kind);
  j.create_time = FormatTimestamp(f.created);
  j.zone = f.zone;
  j.region = f.region;
  j.family = f.family;
  j.node = f.node;
  if (f.kind == FaultKind::kCutOff || f.kind == FaultKind::kDevice) {
    j.worker = f.worker;
  }
  if (f.kind == FaultKind::kDevice) {
    j.device = f.device;
  }
  if (f.kind == FaultKind::kStorm) {
    j.storm = api::EmulatorFault::Storm{f.rate, f.http_codes, f.seed};
  }
  if (f.kind == FaultKind::kSlow) {
    j.factor = f.factor;
  }
  if (f.duration) {
    j.duration = FormatMillis(*f.duration);
    j.end_time = FormatTimestamp(f.created + *f.duration);
  }
  if (f.notice) {
    j.notice = FormatMillis(*f.notice);
  }
  return j;
}

RpcOr<api::EmulatorFault> ApiServerImpl::AddFaultLocked(Fault f, Clock::MonoTime now, Clock::WallTime wall) {
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
    case FaultKind::kMaintenance: {
      bool preempt = f.kind == FaultKind::kPreempt;
      if (preempt && !node->spot) {
        return RpcError{
            RpcCode::kFailedPrecondition,
            "fault: " + f.node + " is not a spot or preemptible node; only those are preempted",
            Json::array()};
      }
      // Either needs a READY node that has no such event coming yet.
      bool already = preempt ? node->preemption.has_value() : node->maintenance.has_value();
      if (node->state != NodeState::kReady || already) {
        std::string coming = preempt ? " and already being preempted" : " and already under maintenance";
        return RpcError{RpcCode::kFailedPrecondition,
                        "fault: " + f.node + " is " + node->state.Name() + (already ? coming : "") +
                            (preempt ? "; only READY nodes are preempted"
                                     : "; maintenance needs a READY node"),
                        Json::array()};
      }
      break;
    }
    case FaultKind::kCutOff:
    case FaultKind::kDevice:
      if (f.worker < 0 || static_cast<size_t>(f.worker) >= node->workers.size()) {
        return RpcError{RpcCode::kFailedPrecondition,
                        "fault: " + f.node + " has no worker " + std::to_string(f.worker) +
                            " (it has " + std::to_string(node->workers.size()) + " running)",
                        Json::array()};
      }
      if (f.kind == FaultKind::kDevice && f.device >= node->type.chips_per_worker) {
        return InvalidArgument("fault: the workers of " + f.node + " (" + node->type.name +
                               ") have devices 0 to " +
                               std::to_string(node->type.chips_per_worker - 1) + ", not " +
                               std::to_string(f.device));
      }
      break;
    case FaultKind::kStorm:
    case FaultKind::kSlow:
    case FaultKind::kDenied:
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
  } else if (f.kind == FaultKind::kDevice) {
    PostHostCallLocked(
        *node, "SetDeviceRemoved",
        [name = node->name, w = f.worker, d = f.device](WorkerHosts& h) {
          return h.SetDeviceRemoved(name, w, d, true);
        },
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
    case FaultKind::kDevice:
      // The chip comes back unless another fault still holds it away.
      if (RemovedDevices(faults_, f.node, f.worker).count(f.device) == 0) {
        PostHostCallLocked(
            n, "SetDeviceRemoved",
            [name = n.name, w = f.worker, d = f.device](WorkerHosts& h) {
              return h.SetDeviceRemoved(name, w, d, false);
            },
            Waiter::kNone);
      }
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

api::EmulatorStatus ApiServerImpl::StatusLocked() {
  api::EmulatorStatus s;
  s.now = FormatTimestamp(clock_.Now());
  for (const auto& [name, n] : nodes_) {
    api::EmulatorNode j;
    for (size_t i = 0; i < n.workers.size(); ++i) {
      int removed = static_cast<int>(RemovedDevices(faults_, name, static_cast<int>(i)).size());
      j.workers.push_back({static_cast<int>(i), n.workers[i].address, n.workers[i].hostname,
                           n.workers[i].host_key, i < n.cut_off.size() && n.cut_off[i],
                           n.type.chips_per_worker - removed});
    }
    j.name = name;
    j.state = n.state.Name();
    j.accelerator_type = n.type.name;
    j.chips = n.type.chips;
    j.spot = n.spot;
    j.health = n.health;
    j.queued_resource = n.queued_resource;
    if (n.step) {
      j.operation = n.step->op;
    }
    j.preemption_pending = n.preemption.has_value();
    if (n.maintenance) {
      j.maintenance = n.maintenance->phase == NodeMaintenance::kNotice ? "PENDING" : "ONGOING";
    }
    s.nodes.push_back(std::move(j));
  }
  for (const auto& [name, q] : qrs_) {
    api::EmulatorQueuedResource j{name, q.state.Name(), {}};
    for (const NodePlan& p : q.plan) {
      j.nodes.push_back(p.name);
    }
    s.queued_resources.push_back(std::move(j));
  }
  for (const Fault& f : faults_.faults()) {
    s.faults.push_back(RenderFault(f));
  }
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
    api::EmulatorUsage u;
    u.zone = zone;
    u.family = family->name;
    u.chips_in_use = CapacityUsedLocked(zone, *family);
    u.chips_limit = CapacityLimitOf(zone, *family);
    s.capacity.push_back(std::move(u));
  }
  for (const QuotaLimit& l : config_.quota) {
    api::EmulatorUsage u;
    u.region = l.region;
    u.family = l.family;
    u.tier = QuotaTierName(l.tier);
    u.chips_in_use = QuotaUsedLocked(l);
    u.chips_limit = l.chips;
    s.quota.push_back(std::move(u));
  }
  s.operations_total = static_cast<long long>(ops_.size());
  for (const auto& [name, op] : ops_) {
    s.operations_pending += op.done ? 0 : 1;
  }
  s.host_work_pending = static_cast<long long>(work_.size());
  return s;
}

std::string ApiServerImpl::StatusJson() {
  std::lock_guard<std::mutex> l(mu_);
  AdvanceLocked(clock_.MonotonicNow(), clock_.Now());
  return api::ToJson(StatusLocked()) + "\n";
}

void ApiServerImpl::DestroyAllHosts() {
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [name, n] : nodes_) {
    PostHostCallLocked(
        n, "Destroy", [name = n.name](WorkerHosts& h) { return h.Destroy(name); }, Waiter::kNone);
  }
}

HttpResponse ApiServerImpl::RotateOwnerToken() {
  if (!config_.auth.publish_owner_token) {
    return ErrorResponse({RpcCode::kFailedPrecondition,
                          "this emulator has nowhere to publish a new token; only `tpufleet "
                          "emulator start` can rotate it",
                          Json::array()});
  }
  if (Status s = tokens_.RotateOwner(config_.auth.publish_owner_token); !s.ok()) {
    Log(LogLevel::kWarn, "emulator: rotating the owner's token: " + s.message());
    return ErrorResponse({RpcCode::kInternal,
                          "the new token could not be published: " + s.message(), Json::array()});
  }
  Log(LogLevel::kInfo,
      "emulator: the owner's token was rotated; the old one is refused from now on");
  return JsonResponse(Json{{"rotated", true}});
}

HttpResponse ApiServerImpl::HandleAdmin(const HttpRequest& req) {
  // Not under mu_: publishing writes a file, and the API need not wait for it.
  if (req.method == "POST" && req.path == "/emulator/v1/token:rotate") {
    return RotateOwnerToken();
  }
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
    return JsonTextResponse(api::ToJson(StatusLocked()));
  }
  if (path == kFaults) {
    if (req.method == "GET") {
      std::vector<api::EmulatorFault> list;
      for (const Fault& f : faults_.faults()) {
        list.push_back(RenderFault(f));
      }
      return JsonTextResponse(api::ToJson(list));
    }
    if (req.method == "POST") {
      Result<Fault> f = ParseFault(req.body);
      if (!f.ok()) {
        return ErrorResponse(InvalidArgument(f.status().message()));
      }
      RpcOr<api::EmulatorFault> added = AddFaultLocked(std::move(f).value(), now, wall);
      return added.ok() ? JsonTextResponse(api::ToJson(added.value()))
                        : ErrorResponse(added.error());
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
      return f != nullptr ? JsonTextResponse(api::ToJson(RenderFault(*f)))
                          : ErrorResponse(NotFound("faults/" + id));
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
                            " (see GET /emulator/v1/status, /emulator/v1/faults, POST "
                            "/emulator/v1/token:rotate)",
                        Json::array()});
}

}  // namespace tpufleet::emulator
