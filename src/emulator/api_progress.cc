// Time-driven progress of the emulated Cloud TPU: node steps, preemption and
// maintenance events, capacity and quota, and the WorkerHosts calls behind them.
#include <algorithm>
#include <cctype>

#include "emulator/api_internal.h"
#include "util/log.h"

namespace tpufleet::emulator {

Millis ApiServerImpl::Scaled(Millis d, Clock::MonoTime now) const {
  double factor = faults_.SlowFactor(now);
  return Millis(static_cast<long long>(static_cast<double>(d.count()) * factor));
}

std::string ApiServerImpl::NewUidLocked() {
  // Node.id is an int64 shown as 19 digits; keep the first digit non-zero.
  return std::to_string(1000000000000000000ULL + rng_() % 8000000000000000000ULL);
}

NodeStep& ApiServerImpl::NewStepLocked(EmulatedNode& n, NodeStep::Kind kind, const std::string& op,
                                       Millis duration, Clock::MonoTime now) {
  NodeStep s;
  s.kind = kind;
  s.seq = next_seq_++;
  s.op = op;
  s.due = now + Scaled(duration, now);
  n.step = std::move(s);
  return *n.step;
}

EmulatedNode& ApiServerImpl::StartCreateLocked(const Call& c, const std::string& node_id,
                                               NodeInput input, const std::string& op,
                                               const std::string& queued_resource,
                                               bool multislice) {
  std::optional<RpcError> stockout =
      CheckCapacityLocked(c.zone, *input.type.family, input.type.chips, c.now);
  EmulatedNode rec;
  rec.name = c.parent + "/nodes/" + node_id;
  rec.project = c.project;
  rec.zone = c.zone;
  rec.node_id = node_id;
  rec.uid = NewUidLocked();
  rec.api_version = c.version == "v2alpha1" ? "v2alpha1" : "v2";
  rec.spec = std::move(input.spec);
  rec.type = input.type;
  rec.spot = input.spot;
  rec.state = NodeState::kCreating;
  rec.create_time = c.wall;
  rec.queued_resource = queued_resource;
  rec.multislice = multislice;
  std::string name = rec.name;
  EmulatedNode& n = nodes_.insert_or_assign(name, std::move(rec)).first->second;
  if (stockout) {
    NodeStep& s = NewStepLocked(n, NodeStep::kCreate, op, config_.timings.stockout_fail, c.now);
    s.fail = std::move(*stockout);
  } else {
    NewStepLocked(n, NodeStep::kCreate, op, config_.timings.create, c.now);
    PostBootLocked(n, /*new_addresses=*/false, Waiter::kStep);
  }
  return n;
}

void ApiServerImpl::StartDeleteLocked(EmulatedNode& n, const std::string& op, Clock::MonoTime now) {
  if (n.step && !n.step->op.empty() && n.step->op != op) {
    FailOperationLocked(
        n.step->op,
        {RpcCode::kAborted, "Operation was aborted: the node is being deleted.", Json::array()});
  }
  DropNodeEventsLocked(n);
  n.state = NodeState::kDeleting;
  n.health.clear();
  NewStepLocked(n, NodeStep::kDelete, op, config_.timings.remove, now);
  PostHostCallLocked(
      n, "Destroy", [name = n.name](WorkerHosts& h) { return h.Destroy(name); }, Waiter::kStep);
}

void ApiServerImpl::DropNodeEventsLocked(EmulatedNode& n) {
  if (n.maintenance) {
    faults_.Remove(n.maintenance->fault_id);
    n.maintenance.reset();
  }
  if (n.preemption) {
    faults_.Remove(n.preemption->fault_id);
    n.preemption.reset();
  }
}

void ApiServerImpl::EraseNodeLocked(const std::string& name) {
  std::vector<std::string> ids;
  for (const Fault& f : faults_.faults()) {
    if (f.node == name) {
      ids.push_back(f.id);
    }
  }
  for (const std::string& id : ids) {
    faults_.Remove(id);
  }
  nodes_.erase(name);
}

void ApiServerImpl::AdvanceLocked(Clock::MonoTime now, Clock::WallTime wall) {
  for (const Fault& f : faults_.Expire(now)) {
    EndFaultLocked(f);
  }
  std::vector<std::string> names;
  names.reserve(nodes_.size());
  for (const auto& [name, n] : nodes_) {
    names.push_back(name);
  }
  for (const std::string& name : names) {
    auto it = nodes_.find(name);
    if (it == nodes_.end()) {
      continue;
    }
    EmulatedNode& n = it->second;
    if (n.preemption && now >= n.preemption->at) {
      PreemptLocked(n);
    }
    if (n.maintenance) {
      AdvanceMaintenanceLocked(n, now, wall);
    }
    if (n.step && now >= n.step->due && n.step->host_calls == 0) {
      FinishStepLocked(name, now, wall);
    }
  }
  std::vector<std::string> qr_names;
  for (const auto& [name, q] : qrs_) {
    qr_names.push_back(name);
  }
  for (const std::string& name : qr_names) {
    auto it = qrs_.find(name);
    if (it != qrs_.end() && AdvanceQueuedResourceLocked(it->second, now, wall)) {
      qrs_.erase(name);
    }
  }
  if (ops_.size() > kMaxDoneOperations) {
    std::vector<std::pair<Clock::WallTime, std::string>> done;
    for (const auto& [name, op] : ops_) {
      if (op.done) {
        done.emplace_back(op.create_time, name);
      }
    }
    if (done.size() > kMaxDoneOperations) {
      std::sort(done.begin(), done.end());
      for (size_t i = 0; i < done.size() - kMaxDoneOperations; ++i) {
        ops_.erase(done[i].second);
      }
    }
  }
}

void ApiServerImpl::FinishStepLocked(const std::string& name, Clock::MonoTime, Clock::WallTime) {
  EmulatedNode& n = nodes_.at(name);
  NodeStep step = std::move(*n.step);
  n.step.reset();
  auto internal = [](const Status& s) {
    return RpcError{RpcCode::kInternal,
                    "an internal error has occurred (worker hosts: " + s.message() + ")",
                    Json::array()};
  };
  // A create or start that went well.
  auto finish_ready = [&] {
    n.state = NodeState::kReady;
    n.health = "HEALTHY";
    FinishOperationLocked(step.op, RenderNode(n));
  };
  switch (step.kind) {
    case NodeStep::kCreate:
      if (step.fail || !step.host_status.ok()) {
        FailOperationLocked(step.op, step.fail ? *step.fail : internal(step.host_status));
        if (!step.host_status.ok()) {
          Log(LogLevel::kWarn,
              "emulator: booting " + name + " failed: " + step.host_status.message());
          PostHostCallLocked(
              n, "Destroy", [name](WorkerHosts& h) { return h.Destroy(name); }, Waiter::kNone);
        }
        EraseNodeLocked(name);
        return;
      }
      finish_ready();
      return;
    case NodeStep::kStart:
      if (step.fail || !step.host_status.ok()) {
        n.state = NodeState::kStopped;
        FailOperationLocked(step.op, step.fail ? *step.fail : internal(step.host_status));
        return;
      }
      finish_ready();
      return;
    case NodeStep::kStop:
      n.state = NodeState::kStopped;
      FinishOperationLocked(step.op, RenderNode(n));
      return;
    case NodeStep::kDelete:
      EraseNodeLocked(name);
      FinishOperationLocked(step.op, Json::object());
      return;
    case NodeStep::kUpdate:
      if (!step.host_status.ok()) {
        FailOperationLocked(step.op, internal(step.host_status));
        return;
      }
      FinishOperationLocked(step.op, RenderNode(n));
      return;
  }
}

void ApiServerImpl::PreemptLocked(EmulatedNode& n) {
  DropNodeEventsLocked(n);
  if (n.step) {
    FailOperationLocked(
        n.step->op,
        {RpcCode::kAborted, "Operation was aborted: the node was preempted.", Json::array()});
    n.step.reset();
  }
  n.state = NodeState::kPreempted;
  n.health.clear();
  PostHostCallLocked(
      n, "Halt", [name = n.name](WorkerHosts& h) { return h.Halt(name); }, Waiter::kNone);
}

void ApiServerImpl::AdvanceMaintenanceLocked(EmulatedNode& n, Clock::MonoTime now,
                                             Clock::WallTime) {
  NodeMaintenance& m = *n.maintenance;
  if (m.phase == NodeMaintenance::kNotice && now >= m.due) {
    if (n.state != NodeState::kReady) {
      faults_.Remove(m.fault_id);
      n.maintenance.reset();
      return;
    }
    // The node stays READY; its health says it is under maintenance (gcloud warns on
    // UNHEALTHY_MAINTENANCE), and upcomingMaintenance turns ONGOING.
    m.phase = NodeMaintenance::kOngoing;
    m.seq = next_seq_++;
    m.due = now + Scaled(config_.timings.maintenance, now);
    n.health = "UNHEALTHY_MAINTENANCE";
    PostHostCallLocked(
        n, "Halt", [name = n.name](WorkerHosts& h) { return h.Halt(name); }, Waiter::kMaintenance);
    PostBootLocked(n, /*new_addresses=*/true, Waiter::kMaintenance);
    return;
  }
  if (m.phase == NodeMaintenance::kOngoing && now >= m.due && m.host_calls == 0) {
    if (n.state == NodeState::kReady) {
      if (m.host_status.ok()) {
        n.health = "HEALTHY";
      } else {
        Log(LogLevel::kWarn,
            "emulator: maintenance of " + n.name + " failed: " + m.host_status.message());
        n.health = "TIMEOUT";
      }
    }
    faults_.Remove(m.fault_id);
    n.maintenance.reset();
  }
}

// --- host work ---------------------------------------------------------------

uint64_t ApiServerImpl::AddHostCallLocked(EmulatedNode& n, Waiter waiter) {
  switch (waiter) {
    case Waiter::kNone:
      return 0;
    case Waiter::kStep:
      n.step->host_calls++;
      return n.step->seq;
    case Waiter::kMaintenance:
      n.maintenance->host_calls++;
      return n.maintenance->seq;
  }
  return 0;
}

void ApiServerImpl::PostBootLocked(EmulatedNode& n, bool new_addresses, Waiter waiter) {
  NodeHostSpec spec;
  spec.name = n.name;
  spec.id = n.uid;
  spec.accelerator_type = n.type.name;
  spec.family = n.type.family->name;
  spec.chips_per_worker = n.type.chips_per_worker;
  spec.workers = n.type.workers;
  if (n.spec.contains("metadata")) {
    spec.metadata = n.spec["metadata"].get<std::map<std::string, std::string>>();
  }
  uint64_t seq = AddHostCallLocked(n, waiter);
  std::string uid = n.uid;
  work_.Post(n.name, [this, spec = std::move(spec), new_addresses, waiter, seq, uid] {
    Result<std::vector<WorkerInfo>> r = InternalError("not run");
    try {
      r = hosts_->Boot(spec, new_addresses);
    } catch (const std::exception& e) {
      r = InternalError(std::string("Boot threw: ") + e.what());
    }
    std::lock_guard<std::mutex> l(mu_);
    auto it = nodes_.find(spec.name);
    if (r.ok() && it != nodes_.end() && it->second.uid == uid &&
        it->second.state != NodeState::kDeleting) {
      it->second.workers = *r;
      it->second.cut_off.assign(it->second.workers.size(), false);
    }
    ReportHostCallLocked(spec.name, uid, waiter, seq, r.status());
  });
}

void ApiServerImpl::PostHostCallLocked(EmulatedNode& n, std::string what,
                                       std::function<Status(WorkerHosts&)> call, Waiter waiter) {
  uint64_t seq = AddHostCallLocked(n, waiter);
  work_.Post(n.name, [this, name = n.name, uid = n.uid, what = std::move(what),
                      call = std::move(call), waiter, seq] {
    Status s;
    try {
      s = call(*hosts_);
    } catch (const std::exception& e) {
      s = InternalError(what + " threw: " + e.what());
    }
    if (!s.ok()) {
      Log(LogLevel::kWarn, "emulator: " + what + " " + name + ": " + s.message());
    }
    std::lock_guard<std::mutex> l(mu_);
    ReportHostCallLocked(name, uid, waiter, seq, s);
  });
}

void ApiServerImpl::ReportHostCallLocked(const std::string& name, const std::string& uid,
                                         Waiter waiter, uint64_t seq, const Status& status) {
  auto it = nodes_.find(name);
  if (it == nodes_.end() || it->second.uid != uid) {
    return;
  }
  EmulatedNode& n = it->second;
  if (waiter == Waiter::kStep && n.step && n.step->seq == seq) {
    n.step->host_calls--;
    if (!status.ok() && n.step->host_status.ok()) {
      n.step->host_status = status;
    }
  } else if (waiter == Waiter::kMaintenance && n.maintenance && n.maintenance->seq == seq) {
    n.maintenance->host_calls--;
    if (!status.ok() && n.maintenance->host_status.ok()) {
      n.maintenance->host_status = status;
    }
  }
}

// --- capacity and quota ------------------------------------------------------

bool ApiServerImpl::HoldsCapacity(const EmulatedNode& n) const {
  if (n.step && n.step->fail) {
    return false;  // a create or start that met a stockout got nothing
  }
  switch (n.state.value()) {
    case NodeState::kCreating:
    case NodeState::kReady:
    case NodeState::kStarting:
    case NodeState::kStopping:
    case NodeState::kRepairing:
    case NodeState::kDeleting:
      return true;
    default:  // STOPPED, PREEMPTED: the capacity went back
      return false;
  }
}

long long ApiServerImpl::CapacityLimitOf(std::string_view zone, const Family& family) const {
  for (auto it = config_.capacity.rbegin(); it != config_.capacity.rend(); ++it) {
    if (it->zone == zone && it->family == family.name) {
      return it->chips;
    }
  }
  return std::find(family.zones.begin(), family.zones.end(), zone) != family.zones.end()
             ? kDefaultZoneCapacityChips
             : 0;
}

long long ApiServerImpl::CapacityUsedLocked(std::string_view zone, const Family& family) const {
  long long used = 0;
  for (const auto& [name, n] : nodes_) {
    if (n.zone == zone && n.type.family == &family && HoldsCapacity(n)) {
      used += n.type.chips;
    }
  }
  return used;
}

RpcError ApiServerImpl::StockoutError(std::string_view zone) {
  return RpcError{RpcCode::kResourceExhausted,
                  "There is no more capacity in the zone \"" + std::string(zone) +
                      "\"; you can try in another zone where Cloud TPU Nodes are offered (see "
                      "https://cloud.google.com/tpu/docs/regions) " +
                      Eid(),
                  Json::array()};
}

std::optional<RpcError> ApiServerImpl::CheckCapacityLocked(std::string_view zone,
                                                           const Family& family, long long chips,
                                                           Clock::MonoTime now) {
  if (faults_.Stockout(zone, family.name, now) != nullptr ||
      CapacityUsedLocked(zone, family) + chips > CapacityLimitOf(zone, family)) {
    return StockoutError(zone);
  }
  return std::nullopt;
}

namespace {

bool TierCounts(QuotaTier tier, bool spot) {
  return tier == QuotaTier::kAny || (tier == QuotaTier::kSpot) == spot;
}

// "TPUV6EPreemptiblePerProjectPerRegionForTPUAPI", after the names users report.
std::string QuotaName(const Family& family, bool preemptible) {
  std::string t;
  for (char ch : family.api_type) {
    if (ch != '_') {
      t += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    }
  }
  return "TPU" + t + (preemptible ? "Preemptible" : "") + "PerProjectPerRegionForTPUAPI";
}

}  // namespace

long long ApiServerImpl::QuotaUsedLocked(const QuotaLimit& limit) const {
  long long used = 0;
  for (const auto& [name, n] : nodes_) {
    if (RegionOfZone(n.zone) == limit.region && n.type.family->name == limit.family &&
        TierCounts(limit.tier, n.spot)) {
      used += n.type.chips;
    }
  }
  // SUSPENDED and FAILED queued resources keep holding quota until deleted (users
  // report it: tpu-api.md §4).
  for (const auto& [name, q] : qrs_) {
    if ((q.state != NodeState::kSuspended && q.state != NodeState::kFailed) ||
        RegionOfZone(q.zone) != limit.region || !TierCounts(limit.tier, q.spot)) {
      continue;
    }
    for (const NodePlan& p : q.plan) {
      if (p.type.family->name == limit.family && !nodes_.count(p.name)) {
        used += p.type.chips;
      }
    }
  }
  return used;
}

std::optional<RpcError> ApiServerImpl::CheckQuotaLocked(const Call& c, const Family& family,
                                                        bool spot, long long chips,
                                                        Clock::MonoTime now, bool queued) {
  std::string region = RegionOfZone(c.zone);
  std::optional<long long> exceeded_limit;
  bool preemptible_name = spot;
  for (const QuotaLimit& l : config_.quota) {
    if (l.region == region && l.family == family.name && TierCounts(l.tier, spot) &&
        QuotaUsedLocked(l) + chips > l.chips) {
      exceeded_limit = l.chips;
      break;
    }
  }
  if (!exceeded_limit && faults_.Quota(region, family.name, now) != nullptr) {
    exceeded_limit = 0;
    for (const QuotaLimit& l : config_.quota) {
      if (l.region == region && l.family == family.name && TierCounts(l.tier, spot)) {
        exceeded_limit = l.chips;
      }
    }
  }
  if (!exceeded_limit) {
    return std::nullopt;
  }
  std::string name = QuotaName(family, preemptible_name);
  std::string limit = std::to_string(*exceeded_limit);
  std::string message =
      queued ? "Quota '" + name + "' exhausted. Limit " + limit + " in region " + region
             : "Quota limit '" + name + "' has been exceeded. Limit: " + limit + " in region " +
                   region + ".";
  return RpcError{RpcCode::kResourceExhausted, message,
                  Json::array({ErrorInfoDetail("RESOURCE_QUOTA_EXCEEDED", "googleapis.com",
                                               {{"service", "tpu.googleapis.com"},
                                                {"consumer", "projects/" + c.project},
                                                {"quota_limit", name},
                                                {"quota_limit_value", limit},
                                                {"quota_location", region}})})};
}

}  // namespace tpufleet::emulator
