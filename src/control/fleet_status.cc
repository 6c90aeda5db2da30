#include "control/fleet_status.h"

#include <algorithm>
#include <future>
#include <map>
#include <set>

#include "control/ssh_sync.h"
#include "core/cost.h"

namespace tpufleet {
namespace {

// States in which a node exists and is billed.
bool IsBilled(const std::string& state) {
  static const std::set<std::string> unbilled = {"",        "REQUESTED", "STOCKOUT",
                                                 "QUEUED",  "NOT_FOUND", "STOPPED", "FAILED",
                                                 "PREEMPTED", "TERMINATED"};
  return unbilled.count(state) == 0;
}

void PriceView(const Catalog& catalog, NodeView& v) {
  const NodeRecord& r = v.record;
  Result<AcceleratorType> type = catalog.Lookup(r.type);
  if (!type.ok() || !IsBilled(r.state)) {
    return;
  }
  double hours = std::chrono::duration<double>(v.age).count() / 3600.0;
  Result<CostEstimate> c = EstimateCost(catalog, *type, hours, 1, r.zone);
  if (!c.ok()) {
    return;
  }
  if (r.capacity == "spot" && c->spot_max_usd) {
    v.cost_usd = *c->spot_max_usd;
    v.cost_is_upper_bound = true;
  } else {
    v.cost_usd = c->on_demand_usd;
  }
}

// Applies the cloud's view to a record; returns the event to log, if any.
std::string Apply(const CloudNode* cloud, NodeRecord& r) {
  std::string before = r.state;
  if (!cloud) {
    // Not there: fine while tpufleet has not made it yet, news otherwise.
    bool expected_absent = before == "REQUESTED" || before == "STOCKOUT" || before == "QUEUED";
    if (!expected_absent) {
      r.state = "NOT_FOUND";
      r.health.clear();
    }
    return !expected_absent && before != "NOT_FOUND" ? "vanished" : "";
  }
  r.state = cloud->state;
  r.health = cloud->health;
  if (!cloud->cloud_name.empty()) {
    r.cloud_name = cloud->cloud_name;
  }
  for (WorkerRecord& w : r.workers) {
    if (w.index < static_cast<int>(cloud->workers.size())) {
      const CloudWorker& c = cloud->workers[w.index];
      w.address = c.external_address.empty() ? c.address : c.external_address;
    }
  }
  if (r.state == before) {
    return "";
  }
  if (r.state == "PREEMPTED" || r.state == "TERMINATED") {
    return "preempted";
  }
  return r.state == "READY" ? "ready" : "";
}

// Nodes asked together: one provider and project. ssh-hosts nodes go one by one, as
// each carries its own addresses.
std::string GroupKey(const NodeRecord& r) {
  return r.provider + "/" + r.project +
         (r.provider == "ssh-hosts" ? "/" + r.fleet + "/" + r.name : "");
}

struct Group {
  std::vector<NodeRecord*> records;
  std::set<std::string> zones;
};

// Asks one provider about its nodes and updates them; the error, if any, for display.
std::string RefreshGroup(World& world, Group& g) {
  Result<CloudProvider*> provider = world.providers.ForRecord(*g.records.front());
  if (!provider.ok()) {
    return provider.status().message();
  }
  Result<std::vector<CloudNode>> nodes =
      (*provider)->ListNodes({g.zones.begin(), g.zones.end()});
  if (!nodes.ok()) {
    return nodes.status().message();
  }
  for (NodeRecord* r : g.records) {
    const CloudNode* found = nullptr;
    for (const CloudNode& n : *nodes) {
      if (n.id == r->name && n.zone == r->zone) {
        found = &n;
      }
    }
    NodeRecord before = *r;
    std::string event = Apply(found, *r);
    if (!found && r->state == "QUEUED") {
      // Still queued, or the queued resource gave up: only it can say which.
      Result<CloudQueuedResource> qr = (*provider)->GetQueuedResource(r->zone, r->name);
      if (qr.ok() && qr->state == "FAILED") {
        r->state = "FAILED";
        r->health = qr->failure.message();
        event = "queue-failed";
      }
    }
    if (r->state == before.state && r->health == before.health &&
        std::equal(r->workers.begin(), r->workers.end(), before.workers.begin(),
                   before.workers.end(), [](const WorkerRecord& a, const WorkerRecord& b) {
                     return a.address == b.address;
                   })) {
      continue;
    }
    r->updated_at = world.clock.Now();
    Status s = world.store.Transaction([&]() -> Status {
      TPUFLEET_TRY(world.store.PutNode(*r));
      if (event.empty()) {
        return Status::Ok();
      }
      return world.store.AddEvent(
          {0, world.clock.Now(), r->fleet, r->name, event, "zone=" + r->zone + " state=" + r->state});
    });
    if (!s.ok()) {
      return s.message();
    }
  }
  return "";
}

}  // namespace

Result<std::vector<NodeView>> FleetStatus(World& world, const Catalog& catalog,
                                          const StatusOptions& options) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> all, world.store.Nodes(""));
  std::vector<NodeRecord> chosen;
  for (const std::string& name : options.nodes) {
    auto it = std::find_if(all.begin(), all.end(),
                           [&](const NodeRecord& r) { return r.name == name; });
    if (it == all.end()) {
      return NotFoundError("no node named " + name + " (see `tpufleet status`)");
    }
  }
  for (NodeRecord& r : all) {
    if (options.nodes.empty() ||
        std::find(options.nodes.begin(), options.nodes.end(), r.name) != options.nodes.end()) {
      chosen.push_back(std::move(r));
    }
  }

  std::map<std::string, std::string> errors;  // provider/project -> message
  if (options.refresh) {
    std::map<std::string, Group> groups;
    for (NodeRecord& r : chosen) {
      std::string key = GroupKey(r);
      groups[key].records.push_back(&r);
      groups[key].zones.insert(r.zone);
    }
    std::map<std::string, std::future<std::string>> pending;
    for (auto& [key, group] : groups) {
      pending[key] = std::async(std::launch::async,
                                [&world, &group] { return RefreshGroup(world, group); });
    }
    for (auto& [key, f] : pending) {
      errors[key] = f.get();
    }
    TPUFLEET_TRY(SyncSshFiles(world));
  }

  std::vector<NodeView> out;
  for (NodeRecord& r : chosen) {
    NodeView v;
    v.refresh_error = errors[GroupKey(r)];
    v.age = std::chrono::duration_cast<std::chrono::seconds>(world.clock.Now() - r.created_at);
    v.record = std::move(r);
    PriceView(catalog, v);
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace tpufleet
