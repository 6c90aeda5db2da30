// PlanUp: the I/O of a plan (the store read, the cloud listed once, the events read);
// what to do is core's PlanNodes (core/up_plan.h). And RecentStockouts, which up.cc
// shares (up_internal.h).
#include <algorithm>

#include "control/up.h"
#include "control/up_internal.h"
#include "util/strings.h"

namespace tpufleet {
namespace up_internal {
namespace {

// "type=v4-32 zone=us-central2-b" -> value of `key`.
std::string DetailValue(const std::string& detail, std::string_view key) {
  for (const std::string& part : Split(detail, ' ')) {
    if (part.size() > key.size() && part.compare(0, key.size(), key) == 0 &&
        part[key.size()] == '=') {
      return part.substr(key.size() + 1);
    }
  }
  return "";
}

}  // namespace

std::vector<Stockout> RecentStockouts(World& world) {
  EventQuery q;
  q.kind = "stockout";
  q.since = world.clock.Now() - kStockoutMemory;
  Result<std::vector<EventRecord>> events = world.store.Events(q);
  std::vector<Stockout> out;
  if (!events.ok()) {
    return out;  // no memory is no worse than a fresh machine
  }
  for (const EventRecord& e : *events) {
    out.push_back({DetailValue(e.detail, "type"), DetailValue(e.detail, "zone"), e.time});
  }
  return out;
}

}  // namespace up_internal

namespace {

CloudSighting Sighting(const CloudNode& n) {
  auto label = n.labels.find(kFleetLabel);
  return {n.id, n.zone, n.state, label == n.labels.end() ? "" : label->second};
}

}  // namespace

Result<UpPlan> PlanUp(const FleetSpec& fleet, const Catalog& catalog, World& world) {
  TPUFLEET_ASSIGN_OR_RETURN(CloudProvider * provider, world.providers.ForFleet(fleet));
  PlanInputs in;
  TPUFLEET_ASSIGN_OR_RETURN(in.records, world.store.Nodes(""));
  TPUFLEET_ASSIGN_OR_RETURN(in.leftovers, world.store.Leftovers(fleet.name));
  ZonesToList zones = PlanZones(fleet, in.records);
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<CloudNode> nodes, provider->ListNodes(zones.nodes));
  for (const CloudNode& n : nodes) {
    in.nodes.push_back(Sighting(n));
  }
  if (!zones.queued.empty()) {
    TPUFLEET_ASSIGN_OR_RETURN(std::vector<CloudQueuedResource> queued,
                              provider->ListQueuedResources(zones.queued));
    for (const CloudQueuedResource& q : queued) {
      in.queued.push_back({q.id, q.zone, q.state, ""});
    }
  }
  in.stockouts = up_internal::RecentStockouts(world);
  in.now = world.clock.Now();

  UpPlan plan;
  plan.nodes = PlanNodes(fleet, catalog, in);
  plan.leftovers = in.leftovers;
  if (fleet.provider != Provider::kSshHosts) {
    // The fleet's records and the nodes up adopts are tracked; the rest of the fleet's
    // label is untracked.
    std::vector<NodeRecord> tracked;
    for (const NodeRecord& r : in.records) {
      if (r.fleet == fleet.name) {
        tracked.push_back(r);
      }
    }
    for (const NodePlan& p : plan.nodes) {
      if (p.exists) {
        NodeRecord adopted;
        adopted.name = p.node;
        adopted.zone = p.zones.front();
        tracked.push_back(std::move(adopted));
      }
    }
    plan.untracked = FindUntracked(nodes, {fleet.name}, tracked, plan.leftovers);
  }
  return plan;
}

}  // namespace tpufleet
