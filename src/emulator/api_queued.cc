// Queued-resource endpoints of the emulated Cloud TPU API (tpu-api.md §4) and their
// life cycle: CREATING → ACCEPTED → WAITING_FOR_RESOURCES → PROVISIONING → ACTIVE,
// FAILED when the validity window closes first, SUSPENDING → SUSPENDED when the
// service preempts (or the user deletes) its nodes, DELETING → gone.
#include <algorithm>
#include <set>

#include "emulator/api_internal.h"
#include "emulator/schema.h"
#include "emulator/system_params.h"
#include "util/strings.h"

namespace tpufleet::emulator {
namespace {

bool ValidQueuedResourceId(std::string_view id) {
  if (id.empty()) {
    return false;
  }
  return std::all_of(id.begin(), id.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '_' || ch == '.' || ch == '~' || ch == '+' || ch == '%' || ch == '-';
  });
}

bool ValidNodeIdForQr(std::string_view id) {
  if (id.empty() || id.size() > 63 || id[0] < 'a' || id[0] > 'z' || id.back() == '-') {
    return false;
  }
  return std::all_of(id.begin(), id.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-';
  });
}

// A google.protobuf.Duration field that must not be negative (a validity window or a
// guaranteed minimum): 400 for anything else, with the field's path `at`.
RpcOr<std::chrono::nanoseconds> ParseNonNegativeDuration(const Json& value, const std::string& at) {
  std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  Result<std::chrono::nanoseconds> d = ParseProtoDuration(text);
  if (!d.ok()) {
    return InvalidArgument("Invalid value at '" + at +
                           "' (type.googleapis.com/google.protobuf.Duration), " +
                           Json(text.substr(0, 64)).dump());
  }
  if (d->count() < 0) {
    return InvalidArgument("Invalid value at '" + at + "', " + Json(text.substr(0, 64)).dump() +
                           ": the duration must not be negative.");
  }
  return *d;
}

// The validity window of a queueing policy, from `wall` on.
struct Window {
  std::optional<Clock::WallTime> after;
  std::optional<Clock::WallTime> until;
};

RpcOr<Window> ParsePolicy(const Json& spec, Clock::WallTime wall) {
  Window w;
  if (!spec.contains("queueingPolicy")) {
    return w;
  }
  const Json& p = spec["queueingPolicy"];
  if (p.size() > 1) {
    return InvalidArgument(
        "Invalid value at 'queued_resource.queueing_policy': set only one of valid_until_duration, "
        "valid_until_time, valid_after_duration, valid_after_time and valid_interval.");
  }
  auto duration = [&](const char* key, std::string_view at) -> RpcOr<Clock::WallTime> {
    EMULATOR_ASSIGN_OR_RETURN_RPC(
        std::chrono::nanoseconds d,
        ParseNonNegativeDuration(p[key], "queued_resource.queueing_policy." + std::string(at)));
    return AddSaturating(wall, d);
  };
  auto time = [&](const Json& v, std::string_view at) -> RpcOr<Clock::WallTime> {
    Result<Clock::WallTime> t = ParseTimestamp(v.get<std::string>());
    if (!t.ok()) {
      return InvalidArgument("Invalid value at 'queued_resource.queueing_policy." +
                             std::string(at) + "' (" + t.status().message() + ")");
    }
    return *t;
  };
  // A policy sets one field (checked above): a bound of the window, as a time or as a
  // duration from now, or both bounds in validInterval.
  struct Bound {
    const char* key;
    const char* at;  // its name in errors
    bool is_duration;
    std::optional<Clock::WallTime> Window::*into;
  };
  static constexpr Bound kBounds[] = {
      {"validUntilDuration", "valid_until_duration", true, &Window::until},
      {"validUntilTime", "valid_until_time", false, &Window::until},
      {"validAfterDuration", "valid_after_duration", true, &Window::after},
      {"validAfterTime", "valid_after_time", false, &Window::after}};
  for (const Bound& b : kBounds) {
    if (p.contains(b.key)) {
      EMULATOR_ASSIGN_OR_RETURN_RPC(w.*b.into,
                                    b.is_duration ? duration(b.key, b.at) : time(p[b.key], b.at));
    }
  }
  if (p.contains("validInterval")) {
    const Json& iv = p["validInterval"];
    if (iv.contains("startTime")) {
      EMULATOR_ASSIGN_OR_RETURN_RPC(w.after, time(iv["startTime"], "valid_interval.start_time"));
    }
    if (iv.contains("endTime")) {
      EMULATOR_ASSIGN_OR_RETURN_RPC(w.until, time(iv["endTime"], "valid_interval.end_time"));
    }
  }
  return w;
}

Call CallFor(const QueuedResourceRecord& q, Clock::MonoTime now, Clock::WallTime wall) {
  Call c;
  c.version = q.version;
  c.project = q.project;
  c.zone = q.zone;
  c.parent = "projects/" + q.project + "/locations/" + q.zone;
  c.now = now;
  c.wall = wall;
  return c;
}

}  // namespace

void ApiServerImpl::SetQrStateLocked(QueuedResourceRecord& q, NodeState s, Clock::MonoTime now,
                                     std::string initiator) {
  q.state = s;
  q.state_since = now;
  q.initiator = std::move(initiator);
}

std::vector<EmulatedNode*> ApiServerImpl::NodesOfLocked(const std::string& qr_name) {
  std::vector<EmulatedNode*> out;
  for (auto& [name, n] : nodes_) {
    if (n.queued_resource == qr_name) {
      out.push_back(&n);
    }
  }
  return out;
}

Json ApiServerImpl::RenderQueuedResource(const QueuedResourceRecord& q) const {
  Json j = q.spec;
  j["name"] = q.name;
  j["createTime"] = FormatTimestamp(q.create_time);
  Json state{{"state", q.state.Name()}, {"stateInitiator", q.initiator}};
  // Each state but WAITING_FOR_RESOURCES carries an (empty) object named after it:
  // "creatingData", "acceptedData", …; a failed one says why.
  if (q.state != NodeState::kWaitingForResources) {
    state[AsciiLower(q.state.Name()) + "Data"] = Json::object();
  }
  if (q.state == NodeState::kFailed && q.failure) {
    state["failedData"]["error"] = OperationErrorJson(*q.failure);
  }
  j["state"] = std::move(state);
  return j;
}

HttpResponse ApiServerImpl::ListQueuedResources(const Call& c) {
  return ListIn(c, qrs_, "queuedResources", [&](const auto& r) {
    return ForVersion(RenderQueuedResource(r), "QueuedResource", c.version);
  });
}

HttpResponse ApiServerImpl::GetQueuedResource(const Call& c, const std::string& id) {
  EMULATOR_ASSIGN_OR_RESPOND(QueuedResourceRecord* found, FindIn(c, qrs_, "queuedResources", id));
  return JsonResponse(ForVersion(RenderQueuedResource(*found), "QueuedResource", c.version));
}

HttpResponse ApiServerImpl::CreateQueuedResource(const Call& c) {
  if (const OperationRecord* prior = FindRequestLocked(c, "queuedResources.create")) {
    return JsonResponse(RenderOperation(*prior));
  }
  std::string id = c.req->Query("queuedResourceId");
  if (!ValidQueuedResourceId(id)) {
    return ErrorResponse(InvalidArgument("Invalid value for field 'queued_resource_id': \"" + id +
                                         "\". Must match ^[A-Za-z0-9_.~+%-]+$."));
  }
  EMULATOR_ASSIGN_OR_RESPOND(Json canon, ParseBodyAs(c, "QueuedResource", "queued_resource"));
  Json spec = std::move(canon);
  spec.erase("name");
  spec.erase("createTime");
  spec.erase("state");
  std::string name = c.parent + "/queuedResources/" + id;
  if (qrs_.count(name)) {
    return ErrorResponse(AlreadyExists(name));
  }
  // The tier is a oneof: spot, guaranteed or (v2alpha1) bestEffort.
  if (spec.contains("spot") + spec.contains("guaranteed") + spec.contains("bestEffort") > 1) {
    return ErrorResponse(InvalidArgument(
        "Invalid value at 'queued_resource': spot, guaranteed and best_effort are mutually "
        "exclusive."));
  }
  if (spec.contains("guaranteed") && spec["guaranteed"].contains("minDuration")) {
    EMULATOR_ASSIGN_OR_RESPOND(std::chrono::nanoseconds d, ParseNonNegativeDuration( spec["guaranteed"]["minDuration"], "queued_resource.guaranteed.min_duration"));
  }
  // Best effort is preemptible as spot is; v2alpha1's provisioningModel SPOT says spot
  // too (gcloud alpha sends it with `spot: {}`, or STANDARD beside `spot: {}`).
  bool spot = spec.contains("spot") || spec.contains("bestEffort") ||
              spec.value("provisioningModel", std::string()) == "SPOT";
  if (!spec.contains("tpu") || !spec["tpu"].contains("nodeSpec") ||
      spec["tpu"]["nodeSpec"].empty()) {
    return ErrorResponse(
        InvalidArgument("Invalid value for field 'queued_resource.tpu.node_spec': a queued "
                        "resource needs at least one node spec."));
  }
  std::vector<NodePlan> plan;
  std::set<std::string> names;
  Json& specs = spec["tpu"]["nodeSpec"];
  for (size_t i = 0; i < specs.size(); ++i) {
    Json& ns = specs[i];
    std::string at = "queued_resource.tpu.node_spec[" + std::to_string(i) + "]";
    if (ns.value("parent", std::string()) != c.parent) {
      return ErrorResponse(InvalidArgument("Invalid value for field '" + at + ".parent': \"" +
                                           ns.value("parent", std::string()) + "\". Must be \"" +
                                           c.parent + "\", the parent of the queued resource."));
    }
    if (!ns.contains("node")) {
      return ErrorResponse(
          InvalidArgument("Invalid value for field '" + at + ".node': a node is required."));
    }
    if (ns.contains("nodeId") == ns.contains("multisliceParams")) {
      return ErrorResponse(InvalidArgument("Invalid value for field '" + at +
                                           "': set exactly one of node_id and multislice_params."));
    }
    EMULATOR_ASSIGN_OR_RESPOND(NodeInput in,
                               ParseNodeInput(ns["node"], at + ".node", c.zone, c.version));
    if (spot) {
      in.spot = true;
      in.spec["schedulingConfig"]["spot"] = true;
    }
    std::vector<std::string> ids;
    bool multislice = false;
    if (ns.contains("nodeId")) {
      ids.push_back(ns["nodeId"].get<std::string>());
    } else {
      const Json& mp = ns["multisliceParams"];
      long long count = mp.value("nodeCount", 0LL);
      if (count < 2) {
        return ErrorResponse(
            InvalidArgument("Invalid value for field '" + at +
                            ".multislice_params.node_count': must be greater than 1."));
      }
      if (count > config_.max_multislice_nodes) {
        return ErrorResponse(InvalidArgument(
            "Invalid value for field '" + at + ".multislice_params.node_count': " +
            std::to_string(count) + " is more than the " +
            std::to_string(config_.max_multislice_nodes) +
            " nodes a queued resource may have (the emulator's max_multislice_nodes)."));
      }
      std::string prefix = mp.value("nodeIdPrefix", id);
      for (long long k = 0; k < count; ++k) {
        ids.push_back(prefix + "-" + std::to_string(k));
      }
      multislice = true;
    }
    for (const std::string& node_id : ids) {
      if (!ValidNodeIdForQr(node_id)) {
        return ErrorResponse(
            InvalidArgument("Invalid value for field '" + at + ".node_id': \"" + node_id +
                            "\". Must be a match of regex '[a-z]([-a-z0-9]*[a-z0-9])?' and at "
                            "most 63 characters."));
      }
      NodePlan p;
      p.name = c.parent + "/nodes/" + node_id;
      p.node_id = node_id;
      p.spec = in.spec;
      p.type = in.type;
      p.multislice = multislice;
      if (!names.insert(p.name).second) {
        return ErrorResponse(InvalidArgument("Invalid value for field '" + at + "': node \"" +
                                             node_id + "\" is named twice."));
      }
      plan.push_back(std::move(p));
    }
  }
  EMULATOR_ASSIGN_OR_RESPOND(Window window, ParsePolicy(spec, c.wall));
  QueuedResourceRecord q;
  q.name = name;
  q.project = c.project;
  q.zone = c.zone;
  q.version = c.version;
  q.spec = std::move(spec);
  q.plan = std::move(plan);
  q.spot = spot;
  q.create_time = c.wall;
  q.valid_after = window.after;
  q.valid_until = window.until;
  SetQrStateLocked(q, NodeState::kCreating, c.now);
  q.due = c.now + Scaled(config_.timings.qr_accept, c.now);
  OperationRecord& op = NewOperationLocked(c, "create", name, "QueuedResource");
  q.pending_op = op.name;
  qrs_.emplace(name, std::move(q));
  RememberRequestLocked(c, "queuedResources.create", op.name);
  return JsonResponse(RenderOperation(op));
}

HttpResponse ApiServerImpl::DeleteQueuedResource(const Call& c, const std::string& id) {
  if (const OperationRecord* prior = FindRequestLocked(c, "queuedResources.delete")) {
    return JsonResponse(RenderOperation(*prior));
  }
  EMULATOR_ASSIGN_OR_RESPOND(QueuedResourceRecord* found, FindIn(c, qrs_, "queuedResources", id));
  QueuedResourceRecord& q = *found;
  std::string state = q.state.Name();
  if (q.state == NodeState::kDeleting) {
    return ErrorResponse(
        {RpcCode::kFailedPrecondition,
         "Cloud TPU received a bad request. delete is not supported while in state " + state + " " +
             Eid(),
         Json::array()});
  }
  bool force = false;
  if (c.req->HasQuery("force")) {
    Result<bool> f = ParseQueryBool(c.req->Query("force"), "force");
    if (!f.ok()) {
      return ErrorResponse(InvalidArgument(f.status().message()));
    }
    force = *f;
  }
  std::vector<EmulatedNode*> nodes = NodesOfLocked(q.name);
  if (!nodes.empty() && !force) {
    return ErrorResponse({RpcCode::kFailedPrecondition,
                          "Cloud TPU received a bad request. Queued resource '" + q.name +
                              "' in state " + state + " still has " + std::to_string(nodes.size()) +
                              " node(s): delete them first, or delete with force=true " + Eid(),
                          Json::array()});
  }
  OperationRecord& op = NewOperationLocked(c, "delete", q.name, "");
  if (!q.pending_op.empty()) {
    FailOperationLocked(
        q.pending_op,
        {RpcCode::kAborted, "Operation was aborted: the queued resource is being deleted.",
         Json::array()});
  }
  q.pending_op = op.name;
  SetQrStateLocked(q, NodeState::kDeleting, c.now);
  q.due = c.now + Scaled(config_.timings.qr_delete, c.now);
  for (EmulatedNode* n : nodes) {
    if (n->state != NodeState::kDeleting) {
      StartDeleteLocked(*n, "", c.now);
    }
  }
  RememberRequestLocked(c, "queuedResources.delete", op.name);
  return JsonResponse(RenderOperation(op));
}

HttpResponse ApiServerImpl::ResetQueuedResource(const Call& c, const std::string& id) {
  EMULATOR_ASSIGN_OR_RESPOND(QueuedResourceRecord* found, FindIn(c, qrs_, "queuedResources", id));
  QueuedResourceRecord& q = *found;
  // The proto gives no preconditions; re-queueing a FAILED or SUSPENDED request whose
  // nodes are gone is the use users describe.
  if ((q.state != NodeState::kFailed && q.state != NodeState::kSuspended) ||
      !NodesOfLocked(q.name).empty()) {
    return ErrorResponse(
        {RpcCode::kFailedPrecondition,
         "Cloud TPU received a bad request. reset is not supported while in state " +
             q.state.Name() + " " + Eid(),
         Json::array()});
  }
  RpcOr<Window> window = ParsePolicy(q.spec, c.wall);
  if (window.ok()) {
    q.valid_after = window.value().after;
    q.valid_until = window.value().until;
  }
  OperationRecord& op = NewOperationLocked(c, "reset", q.name, "QueuedResource");
  q.failure.reset();
  q.pending_op = op.name;
  SetQrStateLocked(q, NodeState::kCreating, c.now);
  q.due = c.now + Scaled(config_.timings.qr_accept, c.now);
  return JsonResponse(RenderOperation(op));
}

void ApiServerImpl::ProvisionLocked(QueuedResourceRecord& q, Clock::MonoTime now,
                                    Clock::WallTime wall) {
  Call c = CallFor(q, now, wall);
  std::map<const Family*, long long> chips;
  for (const NodePlan& p : q.plan) {
    chips[p.type.family] += p.type.chips;
  }
  for (const auto& [family, n] : chips) {
    if (std::optional<RpcError> e = CheckQuotaLocked(c, *family, q.spot, n, now, /*queued=*/true)) {
      q.failure = *e;
      SetQrStateLocked(q, NodeState::kFailed, now, "SERVICE");
      return;
    }
  }
  for (const NodePlan& p : q.plan) {
    if (nodes_.count(p.name)) {
      q.failure = AlreadyExists(p.name);
      SetQrStateLocked(q, NodeState::kFailed, now, "SERVICE");
      return;
    }
  }
  for (const NodePlan& p : q.plan) {
    NodeInput in;
    in.spec = p.spec;
    in.type = p.type;
    in.spot = q.spot ||
              (p.spec.contains("schedulingConfig") && IsSpotScheduling(p.spec["schedulingConfig"]));
    StartCreateLocked(c, p.node_id, std::move(in), "", q.name, p.multislice);
  }
  SetQrStateLocked(q, NodeState::kProvisioning, now);
}

bool ApiServerImpl::AdvanceQueuedResourceLocked(QueuedResourceRecord& q, Clock::MonoTime now,
                                                Clock::WallTime wall) {
  // A few passes, so one tick can take a request through states that need no time.
  for (int pass = 0; pass < 4; ++pass) {
    NodeState before = q.state;
    switch (q.state.value()) {
      case NodeState::kCreating:
        if (now >= q.due) {
          SetQrStateLocked(q, NodeState::kAccepted, now);
          FinishOperationLocked(q.pending_op, RenderQueuedResource(q));
          q.pending_op.clear();
        }
        break;
      case NodeState::kAccepted:
        if (!q.valid_after || wall >= *q.valid_after) {
          SetQrStateLocked(q, NodeState::kWaitingForResources, now);
        }
        break;
      case NodeState::kWaitingForResources: {
        if (q.valid_until && wall >= *q.valid_until) {
          q.failure = RpcError{
              RpcCode::kResourceExhausted,
              "The queued resource expired (valid until " + FormatTimestamp(*q.valid_until) +
                  ") before capacity was available in the zone \"" + q.zone + "\" " + Eid(),
              Json::array()};
          SetQrStateLocked(q, NodeState::kFailed, now, "SERVICE");
          break;
        }
        if (now < q.state_since + Scaled(config_.timings.qr_wait, now)) {
          break;
        }
        std::map<const Family*, long long> chips;
        for (const NodePlan& p : q.plan) {
          chips[p.type.family] += p.type.chips;
        }
        bool fits = true;
        for (const auto& [family, n] : chips) {
          fits = fits && !CheckCapacityLocked(q.zone, *family, n, now).has_value();
        }
        if (fits) {
          ProvisionLocked(q, now, wall);
        }
        break;
      }
      case NodeState::kProvisioning: {
        std::vector<EmulatedNode*> nodes = NodesOfLocked(q.name);
        if (nodes.size() < q.plan.size()) {
          q.failure = RpcError{RpcCode::kInternal, "an internal error has occurred", Json::array()};
          SetQrStateLocked(q, NodeState::kFailed, now, "SERVICE");
          for (EmulatedNode* n : nodes) {
            if (n->state != NodeState::kDeleting) {
              StartDeleteLocked(*n, "", now);
            }
          }
        } else if (std::all_of(nodes.begin(), nodes.end(),
                               [](const EmulatedNode* n) { return n->state == NodeState::kReady; })) {
          SetQrStateLocked(q, NodeState::kActive, now);
        }
        break;
      }
      case NodeState::kActive: {
        std::vector<EmulatedNode*> nodes = NodesOfLocked(q.name);
        bool preempted = std::any_of(nodes.begin(), nodes.end(), [](const EmulatedNode* n) {
          return n->state == NodeState::kPreempted;
        });
        bool lost = nodes.size() < q.plan.size() ||
                    std::any_of(nodes.begin(), nodes.end(), [](const EmulatedNode* n) {
                      return n->state == NodeState::kDeleting;
                    });
        if (preempted || lost) {
          // The service deletes what is left: a SUSPENDED request has no nodes.
          SetQrStateLocked(q, NodeState::kSuspending, now, preempted ? "SERVICE" : "USER");
          for (EmulatedNode* n : nodes) {
            if (n->state != NodeState::kDeleting) {
              StartDeleteLocked(*n, "", now);
            }
          }
        }
        break;
      }
      case NodeState::kSuspending:
        if (NodesOfLocked(q.name).empty()) {
          SetQrStateLocked(q, NodeState::kSuspended, now, q.initiator);
        }
        break;
      case NodeState::kDeleting:
        if (NodesOfLocked(q.name).empty() && now >= q.due) {
          FinishOperationLocked(q.pending_op, Json::object());
          return true;
        }
        break;
      default:  // FAILED and SUSPENDED stay; a queued resource takes no other state
        break;
    }
    if (q.state == before) {
      break;
    }
  }
  return false;
}

}  // namespace tpufleet::emulator
