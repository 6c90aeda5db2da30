#include "core/up_plan.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "core/cost.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string Hex64(uint64_t v) {
  char buf[17];
  snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// The provider's zones to look in for this fleet's gcp-tpu nodes.
std::vector<std::string> SpecZones(const FleetSpec& fleet, bool queued_only) {
  std::set<std::string> zones;
  for (const NodeSpec& n : fleet.nodes) {
    if (!queued_only || n.queued) {
      zones.insert(n.zones.begin(), n.zones.end());
    }
  }
  return {zones.begin(), zones.end()};
}

bool IsLeftover(const std::vector<LeftoverRecord>& leftovers, const std::string& id,
                const std::string& zone) {
  return std::any_of(leftovers.begin(), leftovers.end(),
                     [&](const LeftoverRecord& x) { return x.name == id && x.zone == zone; });
}

// "setup changed: rerun on 2 workers", for a kept node whose workers ran another setup.
void PlanSetupReruns(const NodeRecord* record, const NodeSpec& spec, NodePlan& p) {
  if (!record || spec.setup.empty()) {
    return;
  }
  int unknown = 0;
  for (const WorkerRecord& w : record->workers) {
    if (w.setup_done && NeedsSetup(w, spec.setup)) {
      ++p.setup_reruns;
      unknown += w.setup_digest.empty() ? 1 : 0;
    }
  }
  if (p.setup_reruns == 0) {
    return;
  }
  std::string workers =
      std::to_string(p.setup_reruns) + (p.setup_reruns == 1 ? " worker" : " workers");
  p.detail = unknown == p.setup_reruns
                 ? "setup version not recorded (set up by an older tpufleet): rerun on " +
                       workers
                 : "setup changed: rerun on " + workers;
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
    case PlanAction::kStart: return "start";
  }
  return "?";
}

std::string SpecDigest(const NodeSpec& n) {
  std::string s = n.type + "|" + n.runtime_version + "|" +
                  std::string(CapacityName(n.capacity)) + "|" + (n.queued ? "queued" : "");
  for (const DataDiskSpec& d : n.data_disks) {
    s += "|" + d.source + ":" + std::string(DiskModeName(d.mode));
  }
  return Hex64(Fnv1a64(s));
}

std::string SetupDigest(std::string_view setup) { return Hex64(Fnv1a64(setup)); }

bool NeedsSetup(const WorkerRecord& worker, std::string_view setup) {
  return !worker.setup_done || (!setup.empty() && worker.setup_digest != SetupDigest(setup));
}

std::vector<std::string> WithoutLeftovers(const std::vector<std::string>& zones,
                                          const std::string& name,
                                          const std::vector<LeftoverRecord>& leftovers) {
  std::vector<std::string> out;
  for (const std::string& z : zones) {
    if (!IsLeftover(leftovers, name, z)) {
      out.push_back(z);
    }
  }
  return out;
}

ZonesToList PlanZones(const FleetSpec& fleet, const std::vector<NodeRecord>& records) {
  ZonesToList out{SpecZones(fleet, false), SpecZones(fleet, true)};
  if (fleet.provider == Provider::kSshHosts) {
    return out;
  }
  for (const NodeRecord& r : records) {
    if (r.fleet == fleet.name && !r.zone.empty()) {
      if (!Contains(out.nodes, r.zone)) {
        out.nodes.push_back(r.zone);
      }
      if (!r.queued_resource.empty() && !Contains(out.queued, r.zone)) {
        out.queued.push_back(r.zone);
      }
    }
  }
  return out;
}

std::vector<NodePlan> PlanNodes(const FleetSpec& fleet, const Catalog& catalog,
                                const PlanInputs& in) {
  bool ssh_hosts = fleet.provider == Provider::kSshHosts;
  std::vector<NodePlan> plans;
  for (const NodeSpec& spec : fleet.nodes) {
    for (const std::string& id : spec.names) {
      NodePlan p;
      p.node = id;
      p.spec = &spec;
      std::string recorded_zone;
      std::string other_fleet;  // node names are SSH aliases: one fleet per name
      const NodeRecord* record = nullptr;
      for (const NodeRecord& r : in.records) {
        if (r.name == id && r.fleet == fleet.name) {
          recorded_zone = r.zone;
          record = &r;
        } else if (r.name == id) {
          other_fleet = r.fleet;
        }
      }
      // The node in the cloud: in its recorded zone if there, else any candidate zone.
      // A leftover is not the node: it is never adopted, and its zone never created in.
      const CloudSighting* found = nullptr;
      for (const CloudSighting& n : in.nodes) {
        bool candidate = ssh_hosts || n.zone == recorded_zone || Contains(spec.zones, n.zone);
        if (n.id == id && candidate && !IsLeftover(in.leftovers, n.id, n.zone) &&
            (!found || n.zone == recorded_zone)) {
          found = &n;
        }
      }
      const CloudSighting* qr = nullptr;
      for (const CloudSighting& q : in.queued) {
        if (q.id == id && !IsLeftover(in.leftovers, q.id, q.zone) &&
            (q.zone == recorded_zone || Contains(spec.zones, q.zone))) {
          qr = &q;
        }
      }
      if (!other_fleet.empty()) {
        p.action = PlanAction::kForeign;
        p.detail = "fleet " + other_fleet + " already has a node named " + id +
                   ", and node names are SSH aliases; rename the node";
      } else if (found) {
        p.exists = true;
        p.zones = {found->zone};
        p.state = found->state;
        if (!ssh_hosts && found->fleet_label != fleet.name) {
          p.action = PlanAction::kForeign;
          p.detail = "node " + id + " exists in " + found->zone + " but was not made by fleet " +
                     fleet.name + "; adopt it with `tpufleet import` or rename the node";
        } else if (found->state.IsGone()) {
          p.action = PlanAction::kRecreate;
          p.detail = "was " + found->state.Name();
        } else if (record && !record->spec_hash.empty() &&
                   record->spec_hash != SpecDigest(spec)) {
          // Remaking a node loses its boot disk and whatever runs on it: the user decides.
          p.action = PlanAction::kDiffers;
          p.detail = "node " + id + " was made as " + record->type + " (" + record->capacity +
                     ", " + record->runtime_version + ") and the spec now differs; run "
                     "`tpufleet down " + id + "` and `up` again to remake it (its boot disk "
                     "goes with it)";
        } else if (found->state == NodeState::kStopped) {
          p.action = PlanAction::kStart;
          p.detail = "is STOPPED; up starts it (its boot disk and data are kept)";
          PlanSetupReruns(record, spec, p);
        } else {
          p.action = found->state.IsUsable() ? PlanAction::kKeep : PlanAction::kWait;
          PlanSetupReruns(record, spec, p);
        }
      } else if (qr) {
        p.zones = {qr->zone};
        p.state = qr->state;
        if (qr->state.MustRecreate()) {
          p.action = PlanAction::kRecreate;
          p.detail = "its queued resource is " + qr->state.Name();
        } else {
          p.action = PlanAction::kWait;
        }
      } else if (ssh_hosts) {
        p.action = PlanAction::kKeep;  // listed in the spec, so it exists
        PlanSetupReruns(record, spec, p);
      } else {
        p.action = PlanAction::kCreate;
        p.zones = OrderZones(spec.zones, spec.type, in.stockouts, in.now);
        if (record && record->state.IsInFlight() && !record->request_id.empty() &&
            Contains(p.zones, record->zone)) {
          // A create asked for there may have landed unseen (a kill, a lost answer, a
          // list that does not show it yet): ask there first, with the same request id,
          // so the API answers with that request rather than a second node elsewhere.
          std::erase(p.zones, record->zone);
          p.zones.insert(p.zones.begin(), record->zone);
          p.resume = true;
          p.detail = "resumes the create requested in " + record->zone;
        }
        p.zones = WithoutLeftovers(p.zones, id, in.leftovers);
        if (p.zones.empty()) {
          p.detail = "every zone still holds a leftover of " + id + " being deleted";
        }
      }
      std::optional<NodePrice> price =
          PriceNode(catalog, spec.type, p.zones.empty() ? "" : p.zones.front(),
                    spec.capacity == Capacity::kSpot, 1);
      p.usd_per_hour = price ? price->usd : 0;
      plans.push_back(std::move(p));
    }
  }
  return plans;
}

}  // namespace tpufleet
