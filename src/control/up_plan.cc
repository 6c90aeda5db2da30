// PlanUp: what `up` (and `up --dry-run`) would do, from one look at the cloud and the
// store; and the helpers that up.cc shares (up_internal.h).
#include <algorithm>
#include <set>

#include "control/up.h"
#include "control/up_internal.h"
#include "core/cost.h"
#include "util/strings.h"

namespace tpufleet {
namespace up_internal {

bool IsGone(const std::string& state) { return state == "PREEMPTED" || state == "TERMINATED"; }
bool IsInFlight(const std::string& state) { return state == "REQUESTED" || state == "QUEUED"; }

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

// The digest of what a node is made of; a change means the node no longer matches.
std::string SpecDigest(const NodeSpec& n) {
  std::string s = n.type + "|" + n.runtime_version + "|" +
                  std::string(CapacityName(n.capacity)) + "|" + (n.queued ? "queued" : "");
  for (const DataDiskSpec& d : n.data_disks) {
    s += "|" + d.source + ":" + std::string(DiskModeName(d.mode));
  }
  char buf[17];
  snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(Fnv1a64(s)));
  return buf;
}

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

std::vector<std::string> WithoutLeftovers(const std::vector<std::string>& zones,
                                          const std::string& name,
                                          const std::vector<LeftoverRecord>& leftovers) {
  std::vector<std::string> out;
  for (const std::string& z : zones) {
    if (std::none_of(leftovers.begin(), leftovers.end(), [&](const LeftoverRecord& x) {
          return x.name == name && x.zone == z;
        })) {
      out.push_back(z);
    }
  }
  return out;
}

}  // namespace up_internal

namespace {

using up_internal::IsGone;
using up_internal::IsInFlight;
using up_internal::RecentStockouts;
using up_internal::SpecDigest;
using up_internal::WithoutLeftovers;

bool IsQueueDead(const std::string& state) {
  return state == "FAILED" || state == "SUSPENDED" || state == "SUSPENDING";
}

double ListPricePerHour(const Catalog& catalog, const NodeSpec& n, const std::string& zone) {
  if (n.type.empty()) {
    return 0;
  }
  Result<AcceleratorType> type = catalog.Lookup(n.type);
  if (!type.ok()) {
    return 0;
  }
  Result<CostEstimate> c = EstimateCost(catalog, *type, 1, 1, zone);
  if (!c.ok()) {
    return 0;
  }
  if (n.capacity == Capacity::kSpot && c->spot_max_usd) {
    return *c->spot_max_usd;
  }
  return c->usd_per_hour;
}

// The provider's zones to look in for this fleet's gcp-tpu nodes.
std::vector<std::string> CandidateZones(const FleetSpec& fleet, bool queued_only) {
  std::set<std::string> zones;
  for (const NodeSpec& n : fleet.nodes) {
    if (!queued_only || n.queued) {
      zones.insert(n.zones.begin(), n.zones.end());
    }
  }
  return {zones.begin(), zones.end()};
}

}  // namespace

std::string_view PlanActionName(PlanAction action) {
  switch (action) {
    case PlanAction::kKeep: return "keep";
    case PlanAction::kCreate: return "create";
    case PlanAction::kRecreate: return "recreate";
    case PlanAction::kWait: return "wait";
    case PlanAction::kForeign: return "refuse";
    case PlanAction::kDiffers: return "differs";
  }
  return "?";
}

Result<UpPlan> PlanUp(const FleetSpec& fleet, const Catalog& catalog, World& world) {
  TPUFLEET_ASSIGN_OR_RETURN(CloudProvider * provider, world.providers.ForFleet(fleet));
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> records, world.store.Nodes(""));
  UpPlan plan;
  TPUFLEET_ASSIGN_OR_RETURN(plan.leftovers, world.store.Leftovers(fleet.name));
  // A leftover is not the node: it is never adopted, and its zone never created in.
  auto is_leftover = [&](const std::string& id, const std::string& zone) {
    return std::any_of(plan.leftovers.begin(), plan.leftovers.end(),
                       [&](const LeftoverRecord& x) { return x.name == id && x.zone == zone; });
  };
  bool ssh_hosts = fleet.provider == Provider::kSshHosts;
  // The zones the fleet's nodes are recorded in too: one the spec dropped may still hold
  // a node, which must be found, not made again and its first copy forgotten.
  std::vector<std::string> zones = CandidateZones(fleet, false);
  std::vector<std::string> qz = CandidateZones(fleet, true);
  for (const NodeRecord& r : records) {
    if (!ssh_hosts && r.fleet == fleet.name && !r.zone.empty()) {
      if (std::find(zones.begin(), zones.end(), r.zone) == zones.end()) {
        zones.push_back(r.zone);
      }
      if (!r.queued_resource.empty() && std::find(qz.begin(), qz.end(), r.zone) == qz.end()) {
        qz.push_back(r.zone);
      }
    }
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<CloudNode> nodes, provider->ListNodes(zones));
  std::vector<CloudQueuedResource> queued;
  if (!qz.empty()) {
    TPUFLEET_ASSIGN_OR_RETURN(queued, provider->ListQueuedResources(qz));
  }
  std::vector<Stockout> stockouts = RecentStockouts(world);

  std::vector<NodePlan>& plans = plan.nodes;
  std::vector<NodeRecord> tracked;  // the fleet's records, and the nodes up will adopt
  for (const NodeRecord& r : records) {
    if (r.fleet == fleet.name) {
      tracked.push_back(r);
    }
  }
  for (const NodeSpec& spec : fleet.nodes) {
    for (const std::string& id : spec.names) {
      NodePlan p;
      p.node = id;
      p.spec = &spec;
      std::string recorded_zone;
      std::string other_fleet;  // node names are SSH aliases: one fleet per name
      const NodeRecord* record = nullptr;
      for (const NodeRecord& r : records) {
        if (r.name == id && r.fleet == fleet.name) {
          recorded_zone = r.zone;
          record = &r;
        } else if (r.name == id) {
          other_fleet = r.fleet;
        }
      }
      // The node in the cloud: in its recorded zone if there, else any candidate zone.
      const CloudNode* found = nullptr;
      for (const CloudNode& n : nodes) {
        bool candidate = ssh_hosts || n.zone == recorded_zone ||
                         std::find(spec.zones.begin(), spec.zones.end(), n.zone) !=
                             spec.zones.end();
        if (n.id == id && candidate && !is_leftover(n.id, n.zone) &&
            (!found || n.zone == recorded_zone)) {
          found = &n;
        }
      }
      const CloudQueuedResource* qr = nullptr;
      for (const CloudQueuedResource& q : queued) {
        if (q.id == id && !is_leftover(q.id, q.zone) && (q.zone == recorded_zone ||
                           std::find(spec.zones.begin(), spec.zones.end(), q.zone) !=
                               spec.zones.end())) {
          qr = &q;
        }
      }
      if (!other_fleet.empty()) {
        p.action = PlanAction::kForeign;
        p.detail = "fleet " + other_fleet + " already has a node named " + id +
                   ", and node names are SSH aliases; rename the node";
      } else if (found) {
        NodeRecord adopted;
        adopted.name = found->id;
        adopted.zone = found->zone;
        tracked.push_back(std::move(adopted));
        p.zones = {found->zone};
        p.state = found->state;
        auto label = found->labels.find(kFleetLabel);
        if (!ssh_hosts && (label == found->labels.end() || label->second != fleet.name)) {
          p.action = PlanAction::kForeign;
          p.detail = "node " + id + " exists in " + found->zone + " but was not made by fleet " +
                     fleet.name + "; adopt it with `tpufleet import` or rename the node";
        } else if (IsGone(found->state)) {
          p.action = PlanAction::kRecreate;
          p.detail = "was " + found->state;
        } else if (record && !record->spec_hash.empty() &&
                   record->spec_hash != SpecDigest(spec)) {
          // Remaking a node loses its boot disk and whatever runs on it: the user decides.
          p.action = PlanAction::kDiffers;
          p.detail = "node " + id + " was made as " + record->type + " (" + record->capacity +
                     ", " + record->runtime_version + ") and the spec now differs; run "
                     "`tpufleet down " + id + "` and `up` again to remake it (its boot disk "
                     "goes with it)";
        } else {
          p.action = found->state == "READY" ? PlanAction::kKeep : PlanAction::kWait;
        }
      } else if (qr) {
        p.zones = {qr->zone};
        p.state = qr->state;
        if (IsQueueDead(qr->state)) {
          p.action = PlanAction::kRecreate;
          p.detail = "its queued resource is " + qr->state;
        } else {
          p.action = PlanAction::kWait;
        }
      } else if (ssh_hosts) {
        p.action = PlanAction::kKeep;  // listed in the spec, so it exists
      } else {
        p.action = PlanAction::kCreate;
        p.zones = OrderZones(spec.zones, spec.type, stockouts, world.clock.Now());
        if (record && IsInFlight(record->state) && !record->request_id.empty() &&
            std::find(p.zones.begin(), p.zones.end(), record->zone) != p.zones.end()) {
          // A create asked for there may have landed unseen (a kill, a lost answer, a
          // list that does not show it yet): ask there first, with the same request id,
          // so the API answers with that request rather than a second node elsewhere.
          std::erase(p.zones, record->zone);
          p.zones.insert(p.zones.begin(), record->zone);
          p.resume = true;
          p.detail = "resumes the create requested in " + record->zone;
        }
        p.zones = WithoutLeftovers(p.zones, id, plan.leftovers);
        if (p.zones.empty()) {
          p.detail = "every zone still holds a leftover of " + id + " being deleted";
        }
      }
      p.usd_per_hour = ListPricePerHour(catalog, spec, p.zones.empty() ? "" : p.zones.front());
      plans.push_back(std::move(p));
    }
  }
  if (!ssh_hosts) {
    plan.untracked = FindUntracked(nodes, {fleet.name}, tracked, plan.leftovers);
  }
  return plan;
}

}  // namespace tpufleet
