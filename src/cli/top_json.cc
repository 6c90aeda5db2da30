#include "cli/top_json.h"

#include <nlohmann/json.hpp>

#include "api/metrics.h"

namespace tpufleet::cli {
namespace {

using nlohmann::json;

// {"verdict", "detail", "worker"?} of `d` into `out`.
void PutDiagnosis(json& out, const Diagnosis& d) {
  out["verdict"] = std::string(VerdictName(d.verdict));
  out["detail"] = d.detail;
  if (d.worker.has_value()) {
    out["worker"] = *d.worker;
  }
}

json WorkerJson(const WorkerMetrics& w) {
  json out = {{"worker", w.target.worker}, {"name", w.target.name}};
  PutDiagnosis(out, w.diagnosis);
  if (w.report.has_value()) {
    out["report"] = json::parse(api::ToJson(*w.report), nullptr, /*allow_exceptions=*/false);
  } else {
    out["error"] = w.status.message();
  }
  return out;
}

}  // namespace

std::string TopJson(const FleetMetrics& fleet) {
  json nodes = json::array();
  for (const GroupMetrics& n : fleet.nodes) {
    json node = {{"name", n.name}, {"workers", json::array()}};
    PutDiagnosis(node, n.diagnosis);
    for (size_t i : n.workers) {
      node["workers"].push_back(WorkerJson(fleet.workers[i]));
    }
    nodes.push_back(std::move(node));
  }
  json jobs = json::array();
  for (const GroupMetrics& j : fleet.jobs) {
    json job = {{"id", j.name}, {"node", j.node}, {"user", j.user}, {"workers", json::array()}};
    PutDiagnosis(job, j.diagnosis);
    for (size_t i : j.workers) {
      job["workers"].push_back(fleet.workers[i].target.worker);
    }
    jobs.push_back(std::move(job));
  }
  json doc = {{"time_unix_ms", fleet.now_unix_ms}, {"nodes", nodes}, {"jobs", jobs}};
  return doc.dump(2, ' ', false, json::error_handler_t::replace);
}

}  // namespace tpufleet::cli
