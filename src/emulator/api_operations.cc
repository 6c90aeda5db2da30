// The emulator's long-running operations: their names, records and rendering, how
// they finish or fail, request ids that make a retried call idempotent, and the
// operations routes (list, get, cancel, delete).
#include <algorithm>
#include <set>

#include "emulator/api_internal.h"
#include "emulator/schema.h"
#include "util/log.h"
#include "util/strings.h"
#include "util/timestamp.h"

namespace tpufleet::emulator {

std::string ApiServerImpl::NewOperationNameLocked(const Call& c) {
  long long ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(c.wall.time_since_epoch()).count();
  std::string name;
  do {
    name = c.parent + "/operations/operation-" + std::to_string(ms) + "-" + Hex(rng_(), 13) + "-" +
           Hex(rng_(), 8) + "-" + Hex(rng_(), 8);
  } while (ops_.count(name));
  return name;
}

OperationRecord& ApiServerImpl::NewOperationLocked(const Call& c, std::string_view verb,
                                                   std::string_view target,
                                                   std::string_view response_type) {
  OperationRecord op;
  op.name = NewOperationNameLocked(c);
  op.version = c.version == "v1" ? "v2" : c.version;
  op.verb = std::string(verb);
  op.target = std::string(target);
  op.response_type = std::string(response_type);
  op.create_time = c.wall;
  std::string name = op.name;
  return ops_.emplace(name, std::move(op)).first->second;
}

Json ApiServerImpl::RenderOperation(const OperationRecord& op) const {
  Json meta{{"@type", "type.googleapis.com/google.cloud.tpu." + op.version + ".OperationMetadata"},
            {"createTime", FormatTimestamp(op.create_time)},
            {"target", op.target},
            {"verb", op.verb},
            {"apiVersion", op.version}};
  if (op.end_time) {
    meta["endTime"] = FormatTimestamp(*op.end_time);
  }
  if (op.cancel_requested) {
    meta["cancelRequested"] = true;
  }
  Json j{{"name", op.name}, {"metadata", meta}};
  if (op.done) {
    j["done"] = true;
    if (op.error) {
      j["error"] = OperationErrorJson(*op.error);
    } else {
      j["response"] = op.response;
    }
  }
  return j;
}

void ApiServerImpl::FinishOperationLocked(const std::string& name, Json response) {
  auto it = ops_.find(name);
  if (it == ops_.end() || it->second.done) {
    return;
  }
  OperationRecord& op = it->second;
  op.done = true;
  op.end_time = clock_.Now();
  if (op.response_type.empty()) {
    op.response = Json{{"@type", "type.googleapis.com/google.protobuf.Empty"}};
  } else {
    response = ForVersion(response, op.response_type, op.version);
    response["@type"] =
        "type.googleapis.com/google.cloud.tpu." + op.version + "." + op.response_type;
    // "@type" first, as Google writes it (clients do not care; people reading do).
    Json ordered{{"@type", response["@type"]}};
    for (auto& [k, v] : response.items()) {
      if (k != "@type") {
        ordered[k] = v;
      }
    }
    op.response = std::move(ordered);
  }
}

void ApiServerImpl::FailOperationLocked(const std::string& name, RpcError error) {
  auto it = ops_.find(name);
  if (it == ops_.end() || it->second.done) {
    return;
  }
  it->second.done = true;
  it->second.end_time = clock_.Now();
  it->second.error = std::move(error);
}

std::string ApiServerImpl::ProjectNumber(std::string_view project) const {
  // Stable for a project id: FNV-1a folded into 12 digits, no leading zero.
  return std::to_string(100000000000ULL + Fnv1a64(project) % 900000000000ULL);
}

std::string ApiServerImpl::Eid() {
  return "[EID: 0x" + Hex(rng_() >> 4, 15) + "]";
}

const OperationRecord* ApiServerImpl::FindRequestLocked(const Call& c, std::string_view method) {
  std::string id = c.req->Query("requestId");
  if (id.empty()) {
    return nullptr;
  }
  PruneRequestIdsLocked(c.now);
  auto it = request_ids_.find(c.parent + "|" + std::string(method) + "|" + id);
  if (it == request_ids_.end()) {
    return nullptr;
  }
  auto op = ops_.find(it->second.op);
  return op == ops_.end() ? nullptr : &op->second;
}

void ApiServerImpl::RememberRequestLocked(const Call& c, std::string_view method,
                                          const std::string& op) {
  std::string id = c.req->Query("requestId");
  if (id.empty()) {
    return;
  }
  std::string key = c.parent + "|" + std::string(method) + "|" + id;
  uint64_t seq = next_request_id_seq_++;
  request_ids_[key] = RequestId{op, seq};
  request_id_order_.push_back(RequestIdAge{c.now, seq, std::move(key)});
  PruneRequestIdsLocked(c.now);
}

void ApiServerImpl::PruneRequestIdsLocked(Clock::MonoTime now) {
  while (!request_id_order_.empty() &&
         (now - request_id_order_.front().at >= kRequestIdLifetime ||
          request_id_order_.size() > kMaxRequestIds)) {
    const RequestIdAge& oldest = request_id_order_.front();
    // The key may have been remembered again since; that later entry stays.
    if (auto it = request_ids_.find(oldest.key);
        it != request_ids_.end() && it->second.seq == oldest.seq) {
      request_ids_.erase(it);
    }
    request_id_order_.pop_front();
  }
}

// --- operations ------------------------------------------------------------

HttpResponse ApiServerImpl::ListOperations(const Call& c) {
  return ListIn(c, ops_, "operations", [this](const auto& r) { return RenderOperation(r); });
}

HttpResponse ApiServerImpl::GetOperation(const Call& c, const std::string& id) {
  EMULATOR_ASSIGN_OR_RESPOND(OperationRecord* found, FindIn(c, ops_, "operations", id));
  return JsonResponse(RenderOperation(*found));
}

HttpResponse ApiServerImpl::CancelOperation(const Call& c, const std::string& id) {
  EMULATOR_ASSIGN_OR_RESPOND(OperationRecord* found, FindIn(c, ops_, "operations", id));
  // Cloud TPU records the request (metadata.cancelRequested) but its operations run
  // to the end; clients must not count on cancellation.
  if (!found->done) {
    found->cancel_requested = true;
  }
  return JsonResponse(Json::object());
}

HttpResponse ApiServerImpl::DeleteOperation(const Call& c, const std::string& id) {
  EMULATOR_ASSIGN_OR_RESPOND(OperationRecord* found, FindIn(c, ops_, "operations", id));
  ops_.erase(found->name);
  return JsonResponse(Json::object());
}

}  // namespace tpufleet::emulator
