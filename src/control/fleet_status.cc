#include "control/fleet_status.h"

#include <algorithm>
#include <future>
#include <map>
#include <set>

#include "control/ssh_sync.h"
#include "control/visible.h"
#include "core/cost.h"

namespace tpufleet {
namespace {

// The list price of `type` in `zone` over `age` into `cost` (spot: an upper bound).
template <typename View>
void Price(const Catalog& catalog, const std::string& type_name, const std::string& zone,
           const std::string& capacity, View& v) {
  double hours = std::chrono::duration<double>(v.age).count() / 3600.0;
  std::optional<NodePrice> p =
      PriceNode(catalog, type_name, zone, capacity == CapacityName(Capacity::kSpot), hours);
  if (p) {
    v.cost_usd = p->usd;
    v.cost_is_upper_bound = p->upper_bound;
  }
}

void PriceView(const Catalog& catalog, NodeView& v) {
  const NodeRecord& r = v.record;
  if (r.state.IsBilled()) {
    Price(catalog, r.type, r.zone, r.capacity, v);
  }
}

// Applies the cloud's view to a record; returns the event to log, if any.
std::string Apply(const CloudNode* cloud, NodeRecord& r) {
  NodeState before = r.state;
  if (!cloud) {
    // Not there: fine while tpufleet has not made it yet, news otherwise.
    if (!before.MayBeUnlisted()) {
      r.state = NodeState::kNotFound;
      r.health.clear();
    }
    return std::string(TransitionEvent(before, r.state));
  }
  r.state = cloud->state;
  r.health = cloud->health;
  r.data_disks = cloud->data_disks;
  if (!cloud->cloud_name.empty()) {
    r.cloud_name = cloud->cloud_name;
  }
  TakeAddresses(*cloud, r);
  return std::string(TransitionEvent(before, r.state));
}

// `current` with what a refresh owns taken from `refreshed`: state, health, data disks,
// the cloud's name and the workers' addresses.
NodeRecord MergeRefreshed(const NodeRecord& refreshed, NodeRecord current) {
  current.state = refreshed.state;
  current.health = refreshed.health;
  current.data_disks = refreshed.data_disks;
  current.cloud_name = refreshed.cloud_name;
  current.updated_at = refreshed.updated_at;
  for (WorkerRecord& w : current.workers) {
    for (const WorkerRecord& f : refreshed.workers) {
      if (f.index == w.index) {
        w.address = f.address;
        w.internal_address = f.internal_address;
      }
    }
  }
  return current;
}

// Nodes asked together: one provider and project. ssh-hosts nodes go one by one, as
// each carries its own addresses.
std::string GroupKey(const NodeRecord& r) {
  return r.provider + "/" + r.project +
         (r.provider == "ssh-hosts" ? "/" + r.fleet + "/" + r.name : "");
}

struct Group {
  NodeRecord probe;  // for ProviderSource::ForRecord: a record of the group
  std::vector<NodeRecord*> records;
  std::vector<const LeftoverRecord*> leftovers;
  std::set<std::string> zones;
  std::vector<CloudNode> listed;  // what the cloud listed in `zones`
  std::vector<const LeftoverRecord*> gone;  // leftovers no longer listed, forgotten
};

// Forgets the group's leftover nodes that the cloud no longer lists; queued resources
// are not in the list, and stay for up or down to delete.
Status ForgetGoneLeftovers(World& world, Group& g) {
  for (const LeftoverRecord* x : g.leftovers) {
    bool listed = std::any_of(g.listed.begin(), g.listed.end(), [&](const CloudNode& n) {
      return n.id == x->name && n.zone == x->zone;
    });
    if (listed || x->queued) {
      continue;
    }
    TPUFLEET_TRY(world.store.Transaction([&]() -> Status {
      TPUFLEET_TRY(world.store.DeleteLeftover(*x));
      return world.store.AddEvent({0, world.clock.Now(), x->fleet, x->name, "leftover-deleted",
                                   "zone=" + x->zone + " gone"});
    }));
    g.gone.push_back(x);
  }
  return Status::Ok();
}

// Asks one provider about its nodes and updates them; the error, if any, for display.
std::string RefreshGroup(World& world, Group& g) {
  Result<CloudProvider*> provider = world.providers.ForRecord(g.probe);
  if (!provider.ok()) {
    return provider.status().message();
  }
  Result<std::vector<CloudNode>> nodes =
      (*provider)->ListNodes({g.zones.begin(), g.zones.end()});
  if (!nodes.ok()) {
    return nodes.status().message();
  }
  g.listed = *nodes;
  if (Status s = ForgetGoneLeftovers(world, g); !s.ok()) {
    return s.message();
  }
  std::vector<NodeRecord*> unchanged;  // confirmed as they are: only their time is written
  for (NodeRecord* r : g.records) {
    const CloudNode* found = nullptr;
    for (const CloudNode& n : *nodes) {
      if (n.id == r->name && n.zone == r->zone) {
        found = &n;
      }
    }
    NodeRecord before = *r;
    std::string event = Apply(found, *r);
    if (!found && r->state == NodeState::kQueued) {
      // Still queued, or the queued resource gave up: only it can say which.
      Result<CloudQueuedResource> qr = (*provider)->GetQueuedResource(r->zone, r->name);
      if (qr.ok() && qr->state == NodeState::kFailed) {
        r->state = NodeState::kFailed;
        r->health = qr->failure.message();
        event = "queue-failed";
      }
    }
    if (!found && r->state == before.state && r->state.MayBeUnlisted()) {
      // Waited for and not listed: nothing was confirmed. Its time stays when its create
      // (or stockout) began, which serve's grace and retry count from (core/reconcile.h).
      continue;
    }
    if (r->state == before.state && r->health == before.health &&
        r->data_disks == before.data_disks &&
        std::equal(r->workers.begin(), r->workers.end(), before.workers.begin(),
                   before.workers.end(), [](const WorkerRecord& a, const WorkerRecord& b) {
                     return a.address == b.address;
                   })) {
      unchanged.push_back(r);
      continue;
    }
    r->updated_at = world.clock.Now();
    Status s = world.store.Transaction([&]() -> Status {
      // Onto the record as it is now, not as it was read before the cloud answered: what
      // another command wrote meanwhile (up pinning host keys) is kept.
      TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> now, world.store.Nodes(r->fleet));
      auto current = std::find_if(now.begin(), now.end(),
                                  [&](const NodeRecord& n) { return n.name == r->name; });
      if (current == now.end()) {
        return Status::Ok();  // forgotten meanwhile (down)
      }
      *r = MergeRefreshed(*r, std::move(*current));
      TPUFLEET_TRY(world.store.PutNode(*r));
      if (event.empty()) {
        return Status::Ok();
      }
      return world.store.AddEvent(
          {0, world.clock.Now(), r->fleet, r->name, event, "zone=" + r->zone + " state=" + r->state.Name()});
    });
    if (!s.ok()) {
      return s.message();
    }
  }
  // The cloud confirmed these: their states are as of now (what `status` says of its
  // states' age). One step for all of them.
  if (unchanged.empty()) {
    return "";
  }
  Status confirmed = world.store.Transaction([&]() -> Status {
    std::map<std::string, std::vector<NodeRecord>> fleets;  // read once each
    for (NodeRecord* r : unchanged) {
      if (fleets.count(r->fleet) == 0) {
        TPUFLEET_ASSIGN_OR_RETURN(fleets[r->fleet], world.store.Nodes(r->fleet));
      }
      for (NodeRecord& current : fleets[r->fleet]) {
        if (current.name == r->name) {
          current.updated_at = r->updated_at = world.clock.Now();
          TPUFLEET_TRY(world.store.PutNode(current));
        }
      }
    }
    return Status::Ok();
  });
  return confirmed.message();
}

// The groups `records` are asked in, keyed by GroupKey.
std::map<std::string, Group> GroupsOf(std::vector<NodeRecord>& records) {
  std::map<std::string, Group> groups;
  for (NodeRecord& r : records) {
    std::string key = GroupKey(r);
    groups[key].probe = r;
    groups[key].records.push_back(&r);
    groups[key].zones.insert(r.zone);
  }
  return groups;
}

}  // namespace

bool TakeAddresses(const CloudNode& cloud, NodeRecord& r) {
  bool changed = false;
  for (WorkerRecord& w : r.workers) {
    if (w.index < static_cast<int>(cloud.workers.size())) {
      const CloudWorker& c = cloud.workers[w.index];
      changed = changed || w.address != c.SshAddress() || w.internal_address != c.address;
      w.address = c.SshAddress();
      w.internal_address = c.address;
    }
  }
  return changed;
}

Result<std::vector<NodeRecord>> RefreshNodes(World& world, const std::vector<std::string>& nodes) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> all, world.store.Nodes(""));
  std::vector<NodeRecord> chosen;
  for (const std::string& name : std::set<std::string>(nodes.begin(), nodes.end())) {
    auto it = std::find_if(all.begin(), all.end(),
                           [&](const NodeRecord& r) { return r.name == name; });
    if (it == all.end()) {
      return NotFoundError("no node named " + name + " (see `tpufleet status`)");
    }
    chosen.push_back(*it);
  }
  for (auto& [key, group] : GroupsOf(chosen)) {
    if (std::string error = RefreshGroup(world, group); !error.empty()) {
      return UnavailableError("could not ask " + group.probe.provider + " about " +
                              group.probe.name + ": " + error);
    }
  }
  TPUFLEET_TRY(SyncSshFiles(world));
  return chosen;
}

Result<FleetStatusReport> FleetStatus(World& world, const Catalog& catalog,
                                      const StatusOptions& options) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> all, world.store.Nodes(""));
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<LeftoverRecord> leftovers, world.store.Leftovers(""));
  std::vector<std::string> fleets;  // whose labels make a node without a record untracked
  for (const NodeRecord& r : all) {
    fleets.push_back(r.fleet);
  }
  for (const LeftoverRecord& x : leftovers) {
    fleets.push_back(x.fleet);
  }
  std::vector<NodeRecord> records = all;  // every record, to tell tracked from untracked
  const Access& access = options.access;
  std::erase_if(fleets, [&](const std::string& f) { return !access.IsAdminOf(f); });
  all = VisibleNodes(access, std::move(all));
  std::vector<const LeftoverRecord*> chosen_leftovers;
  for (const LeftoverRecord& x : leftovers) {
    if (!access.IsAdminOf(x.fleet)) {
      continue;
    }
    if (options.nodes.empty() ||
        std::find(options.nodes.begin(), options.nodes.end(), x.name) != options.nodes.end()) {
      chosen_leftovers.push_back(&x);
    }
  }
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

  FleetStatusReport report;
  std::set<const LeftoverRecord*> gone;
  std::map<std::string, std::string> errors;  // provider/project -> message
  if (options.refresh) {
    std::map<std::string, Group> groups = GroupsOf(chosen);
    for (const LeftoverRecord* x : chosen_leftovers) {
      NodeRecord probe;
      probe.fleet = x->fleet;
      probe.name = x->name;
      probe.provider = x->provider;
      probe.project = x->project;
      probe.zone = x->zone;
      std::string key = GroupKey(probe);
      if (groups[key].records.empty() && groups[key].leftovers.empty()) {
        groups[key].probe = probe;
      }
      groups[key].leftovers.push_back(x);
      groups[key].zones.insert(x->zone);
    }
    std::map<std::string, std::future<std::string>> pending;
    for (auto& [key, group] : groups) {
      pending[key] = std::async(std::launch::async,
                                [&world, &group] { return RefreshGroup(world, group); });
    }
    for (auto& [key, f] : pending) {
      errors[key] = f.get();
    }
    for (auto& [key, group] : groups) {
      gone.insert(group.gone.begin(), group.gone.end());
      std::vector<UntrackedNode> u = FindUntracked(group.listed, fleets, records, leftovers);
      report.untracked.insert(report.untracked.end(), u.begin(), u.end());
    }
    TPUFLEET_TRY(SyncSshFiles(world));
  }

  for (const LeftoverRecord* x : chosen_leftovers) {
    if (gone.count(x) != 0) {
      continue;
    }
    LeftoverView v;
    v.record = *x;
    v.age = std::chrono::duration_cast<std::chrono::seconds>(world.clock.Now() - x->since);
    Price(catalog, x->type, x->zone, x->capacity, v);
    report.leftovers.push_back(std::move(v));
  }
  TPUFLEET_ASSIGN_OR_RETURN(report.serve, ReadServeState(world));
  std::optional<Clock::WallTime> oldest;
  std::vector<NodeView>& out = report.nodes;
  for (NodeRecord& r : chosen) {
    NodeView v;
    v.refresh_error = errors[GroupKey(r)];
    v.age = std::chrono::duration_cast<std::chrono::seconds>(world.clock.Now() - r.created_at);
    TPUFLEET_ASSIGN_OR_RETURN(NodeHistory history, ReadNodeHistory(world.store, r.fleet, r.name));
    v.state = ShownState(r, history, report.serve.running);
    v.time_to_recover_seconds = history.time_to_recover_seconds;
    // A record written without updated_at (one an older tpufleet made) is as old as its
    // create; one with neither says nothing of how old the states are.
    if (Clock::WallTime seen = std::max(r.updated_at, r.created_at); seen != Clock::WallTime{}) {
      oldest = oldest ? std::min(*oldest, seen) : seen;
    }
    v.record = std::move(r);
    PriceView(catalog, v);
    out.push_back(std::move(v));
  }
  if (report.serve.running) {
    report.states_age = report.serve.since_last_pass;
  } else if (oldest && !options.refresh) {
    report.states_age =
        std::chrono::duration_cast<std::chrono::seconds>(world.clock.Now() - *oldest);
  }
  return report;
}

}  // namespace tpufleet
