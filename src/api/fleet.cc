#include "api/fleet.h"

#include "api/json_internal.h"

namespace tpufleet::api {
namespace {

using internal::ArrayOf;
using internal::Dump;
using internal::kDocumentIndent;
using internal::OrNull;
using internal::WithError;
using nlohmann::json;

json OutcomeJson(const NodeOutcome& o) {
  return WithError({{"node", o.node}, {"ok", !o.error}, {"changed", o.changed}}, o.error);
}

json LeftoverOutcomeJson(const LeftoverOutcome& o) {
  return WithError(
      {{"node", o.node}, {"zone", o.zone}, {"fleet", o.fleet}, {"deleted", !o.error}}, o.error);
}

json LeftoverJson(const Leftover& x) {
  return {{"node", x.node},     {"zone", x.zone},     {"fleet", x.fleet},
          {"queued", x.queued}, {"reason", x.reason}, {"last_error", x.last_error}};
}

json UntrackedJson(const UntrackedNode& u) {
  return {{"node", u.node},       {"zone", u.zone},   {"fleet", u.fleet},
          {"project", u.project}, {"state", u.state}, {"duplicates_zone", u.duplicates_zone}};
}

json WorkerJson(const WorkerStatus& w) {
  return {{"index", w.index}, {"address", w.address}, {"hostname", w.hostname},
          {"setup_done", w.setup_done}};
}

json DiskJson(const DiskStatus& d) {
  return {{"disk", d.disk}, {"source", d.source}, {"mode", d.mode}};
}

json NodeStatusJson(const NodeStatus& n) {
  json j = {{"node", n.node},          {"fleet", n.fleet},        {"provider", n.provider},
            {"project", n.project},    {"zone", n.zone},          {"type", n.type},
            {"capacity", n.capacity},  {"state", n.state},        {"health", n.health},
            {"workers", ArrayOf(n.workers, WorkerJson)},
            {"data_disks", ArrayOf(n.data_disks, DiskJson)}, {"age_seconds", n.age_seconds},
            {"labels", n.labels},      {"cost_usd", OrNull(n.cost_usd)},
            {"cost_is_upper_bound", n.cost_is_upper_bound}};
  if (!n.refresh_error.empty()) {
    j["refresh_error"] = n.refresh_error;
  }
  if (n.time_to_recover_seconds) {
    j["time_to_recover_seconds"] = *n.time_to_recover_seconds;
  }
  return j;
}

json ServeStatusJson(const ServeStatus& s) {
  json j = {{"running", s.running}};
  if (s.recorded) {
    j["pid"] = s.pid;
    j["host"] = s.host;
    j["fleets"] = s.fleets;
    j["last_pass_seconds_ago"] = s.last_pass_seconds_ago;
  }
  return j;
}

json LeftoverStatusJson(const LeftoverStatus& x) {
  return {{"node", x.node},
          {"fleet", x.fleet},
          {"zone", x.zone},
          {"queued", x.queued},
          {"type", x.type},
          {"capacity", x.capacity},
          {"reason", x.reason},
          {"last_error", x.last_error},
          {"age_seconds", x.age_seconds},
          {"cost_usd", OrNull(x.cost_usd)},
          {"cost_is_upper_bound", x.cost_is_upper_bound}};
}

json PlannedNodeJson(const PlannedNode& p) {
  return {{"node", p.node},       {"action", p.action},
          {"zones", p.zones},     {"state", p.state},
          {"detail", p.detail},   {"setup_reruns", p.setup_reruns},
          {"type", p.type},       {"capacity", p.capacity},
          {"usd_per_hour", p.usd_per_hour}};
}

json EventJson(const Event& e) {
  return {{"id", e.id},     {"time", e.time}, {"fleet", e.fleet},
          {"node", e.node}, {"kind", e.kind}, {"detail", e.detail}};
}

}  // namespace

std::optional<Error> ErrorOf(const Status& status) {
  if (status.ok()) {
    return std::nullopt;
  }
  return Error{std::string(StatusCodeName(status.code())), status.message()};
}

std::string ToJson(const UpPlan& plan) {
  return Dump({{"nodes", ArrayOf(plan.nodes, PlannedNodeJson)},
               {"usd_per_hour", plan.usd_per_hour},
               {"leftovers", ArrayOf(plan.leftovers, LeftoverJson)},
               {"untracked", ArrayOf(plan.untracked, UntrackedJson)}},
              kDocumentIndent);
}

std::string ToJson(const UpReport& report) {
  return Dump({{"fleet", report.fleet},
               {"nodes", ArrayOf(report.nodes, OutcomeJson)},
               {"not_in_spec", report.not_in_spec},
               {"leftovers_tried", ArrayOf(report.leftovers_tried, LeftoverOutcomeJson)},
               {"leftovers", ArrayOf(report.leftovers, LeftoverJson)},
               {"untracked", ArrayOf(report.untracked, UntrackedJson)},
               {"ssh_config", report.ssh_config}},
              kDocumentIndent);
}

std::string ToJson(const DownReport& report) {
  return Dump({{"nodes", ArrayOf(report.nodes, OutcomeJson)},
               {"leftovers_tried", ArrayOf(report.leftovers_tried, LeftoverOutcomeJson)}},
              kDocumentIndent);
}

std::string ToJson(const ImportReport& report) {
  return Dump({{"nodes", ArrayOf(report.nodes, OutcomeJson)}}, kDocumentIndent);
}

std::string ToJson(const StatusReport& report) {
  json j = {{"nodes", ArrayOf(report.nodes, NodeStatusJson)},
            {"leftovers", ArrayOf(report.leftovers, LeftoverStatusJson)},
            {"untracked", ArrayOf(report.untracked, UntrackedJson)}};
  if (report.serve) {
    j["serve"] = ServeStatusJson(*report.serve);
    j["states_age_seconds"] = report.states_age_seconds;
  }
  return Dump(j, kDocumentIndent);
}

std::string ToJson(const std::vector<Event>& events) {
  return Dump(ArrayOf(events, EventJson), kDocumentIndent);
}

}  // namespace tpufleet::api
