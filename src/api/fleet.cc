#include "api/fleet.h"

#include "api/json_internal.h"

namespace tpufleet::api {
namespace {

using internal::Dump;
using internal::ErrorJson;
using internal::OrNull;
using nlohmann::json;

// Documents are indented by two spaces.
constexpr int kIndent = 2;

json OutcomesJson(const std::vector<NodeOutcome>& outcomes) {
  json out = json::array();
  for (const NodeOutcome& o : outcomes) {
    json j = {{"node", o.node}, {"ok", !o.error}, {"changed", o.changed}};
    if (o.error) {
      j["error"] = ErrorJson(*o.error);
    }
    out.push_back(std::move(j));
  }
  return out;
}

json LeftoverOutcomesJson(const std::vector<LeftoverOutcome>& outcomes) {
  json out = json::array();
  for (const LeftoverOutcome& o : outcomes) {
    json j = {{"node", o.node}, {"zone", o.zone}, {"fleet", o.fleet}, {"deleted", !o.error}};
    if (o.error) {
      j["error"] = ErrorJson(*o.error);
    }
    out.push_back(std::move(j));
  }
  return out;
}

json LeftoversJson(const std::vector<Leftover>& leftovers) {
  json out = json::array();
  for (const Leftover& x : leftovers) {
    out.push_back({{"node", x.node}, {"zone", x.zone}, {"fleet", x.fleet},
                   {"queued", x.queued}, {"reason", x.reason}, {"last_error", x.last_error}});
  }
  return out;
}

json UntrackedJson(const std::vector<UntrackedNode>& nodes) {
  json out = json::array();
  for (const UntrackedNode& u : nodes) {
    out.push_back({{"node", u.node}, {"zone", u.zone}, {"fleet", u.fleet},
                   {"project", u.project}, {"state", u.state},
                   {"duplicates_zone", u.duplicates_zone}});
  }
  return out;
}

json NodeStatusJson(const NodeStatus& n) {
  json workers = json::array();
  for (const WorkerStatus& w : n.workers) {
    workers.push_back({{"index", w.index}, {"address", w.address}, {"hostname", w.hostname},
                       {"setup_done", w.setup_done}});
  }
  json j = {{"node", n.node},          {"fleet", n.fleet},        {"provider", n.provider},
            {"project", n.project},    {"zone", n.zone},          {"type", n.type},
            {"capacity", n.capacity},  {"state", n.state},        {"health", n.health},
            {"workers", workers},      {"age_seconds", n.age_seconds},
            {"labels", n.labels},      {"cost_usd", OrNull(n.cost_usd)},
            {"cost_is_upper_bound", n.cost_is_upper_bound}};
  if (!n.refresh_error.empty()) {
    j["refresh_error"] = n.refresh_error;
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

}  // namespace

std::optional<Error> ErrorOf(const Status& status) {
  if (status.ok()) {
    return std::nullopt;
  }
  return Error{std::string(StatusCodeName(status.code())), status.message()};
}

std::string ToJson(const UpPlan& plan) {
  json nodes = json::array();
  for (const PlannedNode& p : plan.nodes) {
    nodes.push_back({{"node", p.node}, {"action", p.action}, {"zones", p.zones},
                     {"state", p.state}, {"detail", p.detail},
                     {"setup_reruns", p.setup_reruns}, {"type", p.type},
                     {"capacity", p.capacity}, {"usd_per_hour", p.usd_per_hour}});
  }
  return Dump({{"nodes", nodes},
               {"usd_per_hour", plan.usd_per_hour},
               {"leftovers", LeftoversJson(plan.leftovers)},
               {"untracked", UntrackedJson(plan.untracked)}},
              kIndent);
}

std::string ToJson(const UpReport& report) {
  return Dump({{"fleet", report.fleet},
               {"nodes", OutcomesJson(report.nodes)},
               {"not_in_spec", report.not_in_spec},
               {"leftovers_tried", LeftoverOutcomesJson(report.leftovers_tried)},
               {"leftovers", LeftoversJson(report.leftovers)},
               {"untracked", UntrackedJson(report.untracked)},
               {"ssh_config", report.ssh_config}},
              kIndent);
}

std::string ToJson(const DownReport& report) {
  return Dump({{"nodes", OutcomesJson(report.nodes)},
               {"leftovers_tried", LeftoverOutcomesJson(report.leftovers_tried)}},
              kIndent);
}

std::string ToJson(const ImportReport& report) {
  return Dump({{"nodes", OutcomesJson(report.nodes)}}, kIndent);
}

std::string ToJson(const StatusReport& report) {
  json nodes = json::array();
  for (const NodeStatus& n : report.nodes) {
    nodes.push_back(NodeStatusJson(n));
  }
  json leftovers = json::array();
  for (const LeftoverStatus& x : report.leftovers) {
    leftovers.push_back(LeftoverStatusJson(x));
  }
  return Dump({{"nodes", nodes},
               {"leftovers", leftovers},
               {"untracked", UntrackedJson(report.untracked)}},
              kIndent);
}

std::string ToJson(const std::vector<Event>& events) {
  json out = json::array();
  for (const Event& e : events) {
    out.push_back({{"id", e.id}, {"time", e.time}, {"fleet", e.fleet}, {"node", e.node},
                   {"kind", e.kind}, {"detail", e.detail}});
  }
  return Dump(out, kIndent);
}

}  // namespace tpufleet::api
