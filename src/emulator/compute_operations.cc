#include "emulator/compute_operations.h"

#include "util/strings.h"

namespace tpufleet::emulator {

namespace {

// The reason phrase Compute puts in httpErrorMessage: "NOT FOUND", "CONFLICT".
std::string HttpErrorMessage(int status) {
  switch (status) {
    case 400:
      return "BAD REQUEST";
    case 403:
      return "FORBIDDEN";
    case 404:
      return "NOT FOUND";
    case 409:
      return "CONFLICT";
    case 412:
      return "PRECONDITION FAILED";
    case 429:
      return "TOO MANY REQUESTS";
    case 503:
      return "SERVICE UNAVAILABLE";
    default:
      return "INTERNAL SERVER ERROR";
  }
}

}  // namespace

std::string ComputeOperation::Scope() const {
  return "projects/" + project + (zone.empty() ? "/global" : "/zones/" + zone);
}

std::string ComputeOperation::Path() const {
  return Scope() + "/operations/" + name;
}

ComputeOperation& ComputeOperations::Start(std::string_view project, std::string_view zone,
                                           std::string_view type, std::string_view target,
                                           std::string_view target_id, Clock::WallTime now) {
  ComputeOperation op;
  op.project = std::string(project);
  op.zone = std::string(zone);
  op.type = std::string(type);
  op.target = std::string(target);
  op.target_id = std::string(target_id);
  op.insert_time = now;
  long long ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  do {
    op.name = "operation-" + std::to_string(ms) + "-" + Hex(rng_(), 13) + "-" + Hex(rng_(), 8) +
              "-" + Hex(rng_(), 8);
  } while (ops_.count(op.Path()));
  // A uint64 of 19 digits, below 2^63 so that every JSON reader keeps it whole.
  op.id = std::to_string(1000000000000000000ULL + rng_() % 8000000000000000000ULL);
  std::string path = op.Path();
  return ops_.emplace(path, std::move(op)).first->second;
}

void ComputeOperations::Finish(const std::string& path, Clock::WallTime now) {
  auto it = ops_.find(path);
  if (it == ops_.end() || it->second.done) {
    return;
  }
  it->second.done = true;
  it->second.end_time = now;
  Retire(path);
}

void ComputeOperations::Fail(const std::string& path, ComputeError error, Clock::WallTime now) {
  auto it = ops_.find(path);
  if (it == ops_.end() || it->second.done) {
    return;
  }
  it->second.error = std::move(error);
  Finish(path, now);
}

void ComputeOperations::Retire(const std::string& path) {
  done_.push_back(path);
  while (done_.size() > kMaxComputeOperations) {
    ops_.erase(done_.front());
    done_.pop_front();
  }
}

ComputeOperation* ComputeOperations::Find(std::string_view scope, std::string_view name_or_id) {
  std::string prefix = std::string(scope) + "/operations/";
  if (auto it = ops_.find(prefix + std::string(name_or_id)); it != ops_.end()) {
    return &it->second;
  }
  for (auto it = ops_.lower_bound(prefix); it != ops_.end() && StartsWith(it->first, prefix);
       ++it) {
    if (it->second.id == name_or_id) {
      return &it->second;
    }
  }
  return nullptr;
}

std::vector<const ComputeOperation*> ComputeOperations::List(std::string_view scope) const {
  std::vector<const ComputeOperation*> out;
  std::string prefix = std::string(scope) + "/operations/";
  for (auto it = ops_.lower_bound(prefix); it != ops_.end() && StartsWith(it->first, prefix);
       ++it) {
    out.push_back(&it->second);
  }
  return out;
}

void ComputeOperations::Erase(const std::string& path) {
  // Its entry in done_ stays until it comes round; erasing a path twice is harmless.
  ops_.erase(path);
}

Json ComputeOperations::Render(const ComputeOperation& op, std::string_view root) {
  std::string base(root);
  Json j{{"kind", "compute#operation"},
         {"id", op.id},
         {"name", op.name},
         {"operationType", op.type},
         {"targetLink", base + op.target},
         {"status", op.done ? "DONE" : "RUNNING"},
         {"progress", op.done ? 100 : 0},
         {"insertTime", ComputeTimestamp(op.insert_time)},
         {"startTime", ComputeTimestamp(op.insert_time)},
         {"selfLink", base + op.Path()}};
  if (!op.zone.empty()) {
    j["zone"] = base + "projects/" + op.project + "/zones/" + op.zone;
  }
  if (!op.target_id.empty()) {
    j["targetId"] = op.target_id;
  }
  if (!op.client_operation_id.empty()) {
    j["clientOperationId"] = op.client_operation_id;
  }
  if (op.end_time) {
    j["endTime"] = ComputeTimestamp(*op.end_time);
  }
  if (op.error) {
    j["error"] = {{"errors", {{{"code", op.error->op_code}, {"message", op.error->message}}}}};
    j["httpErrorStatusCode"] = op.error->http_status;
    j["httpErrorMessage"] = HttpErrorMessage(op.error->http_status);
  }
  return j;
}

}  // namespace tpufleet::emulator
