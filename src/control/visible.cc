#include "control/visible.h"

#include <algorithm>

#include "api/agent.h"

namespace tpufleet {
namespace {

// The store's record of node `name` of `fleet`, or one with only those two when the
// store has none (a node gone since the event).
NodeRecord NodeOf(const std::string& fleet, const std::string& name,
                  const std::vector<NodeRecord>& nodes) {
  auto it = std::find_if(nodes.begin(), nodes.end(), [&](const NodeRecord& r) {
    return r.fleet == fleet && r.name == name;
  });
  if (it != nodes.end()) {
    return *it;
  }
  NodeRecord bare;
  bare.fleet = fleet;
  bare.name = name;
  return bare;
}

}  // namespace

std::vector<NodeRecord> VisibleNodes(const Access& access, std::vector<NodeRecord> nodes) {
  std::erase_if(nodes, [&](const NodeRecord& r) { return !access.MaySeeNode(r); });
  return nodes;
}

bool MaySeeEvent(const Access& access, const EventRecord& e, const std::vector<NodeRecord>& nodes) {
  if (e.node.empty()) {
    return access.RoleIn(e.fleet).has_value();
  }
  return access.MaySeeNode(NodeOf(e.fleet, e.node, nodes));
}

Result<std::vector<EventRecord>> VisibleEvents(Store& store, const Access& access,
                                               EventQuery query) {
  if (access.everything()) {
    return store.Events(query);
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> nodes, store.Nodes(""));
  std::vector<EventRecord> out;
  auto keep = [&](const EventQuery& q) -> Status {
    TPUFLEET_ASSIGN_OR_RETURN(std::vector<EventRecord> some, store.Events(q));
    for (EventRecord& e : some) {
      if (MaySeeEvent(access, e, nodes)) {
        out.push_back(std::move(e));
      }
    }
    return Status::Ok();
  };
  if (!query.node.empty()) {
    TPUFLEET_TRY(keep(query));
  } else {
    for (const std::string& fleet : access.Fleets()) {
      if (!query.fleet.empty() && query.fleet != fleet) {
        continue;
      }
      EventQuery q = query;
      q.fleet = fleet;
      if (access.IsAdminOf(fleet)) {
        TPUFLEET_TRY(keep(q));  // the whole fleet's, gone nodes' too
        continue;
      }
      // The fleet's own events and each visible node's, each query the newest `limit`
      // of its own: the others' nodes' events crowd none of them out.
      EventQuery own = q;
      own.fleet_only = true;
      TPUFLEET_TRY(keep(own));
      for (const NodeRecord& n : nodes) {
        if (n.fleet == fleet && access.MaySeeNode(n)) {
          q.node = n.name;
          TPUFLEET_TRY(keep(q));
        }
      }
    }
  }
  std::sort(out.begin(), out.end(),
            [](const EventRecord& a, const EventRecord& b) { return a.id < b.id; });
  if (out.size() > query.limit) {
    out.erase(out.begin(), out.end() - static_cast<long>(query.limit));
  }
  return out;
}

std::string RestartableJobUser(const JobRecord& job) {
  Result<api::JobSpec> spec = api::ParseJobSpec(job.spec_json);
  return spec.ok() ? spec->user : "";
}

std::vector<JobRecord> VisibleJobs(const Access& access, std::vector<JobRecord> jobs) {
  std::erase_if(jobs, [&](const JobRecord& j) {
    return !access.MaySeeJob(j.fleet, RestartableJobUser(j));
  });
  return jobs;
}

bool MaySeeShare(const Access& access, const SpendShare& share) {
  const SpendRecord& s = share.part;
  return access.IsAdminOf(s.fleet) ||
         (access.RoleIn(s.fleet).has_value() && s.owner == access.who());
}

std::vector<SpendShare> VisibleSpend(const Access& access, std::vector<SpendShare> shares) {
  std::erase_if(shares, [&](const SpendShare& share) { return !MaySeeShare(access, share); });
  return shares;
}

std::vector<FleetRecord> VisibleFleets(const Access& access, std::vector<FleetRecord> fleets) {
  std::erase_if(fleets, [&](const FleetRecord& f) { return !access.IsAdminOf(f.name); });
  return fleets;
}

Result<bool> MaySeeAllFleets(Store& store, const Access& access) {
  if (access.everything()) {
    return true;
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> nodes, store.Nodes(""));
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<UserRecord> users, store.Users(""));
  std::vector<std::string> fleets = access.Fleets();
  for (const NodeRecord& n : nodes) {
    fleets.push_back(n.fleet);
  }
  for (const UserRecord& u : users) {
    fleets.push_back(u.fleet);
  }
  return !fleets.empty() && std::all_of(fleets.begin(), fleets.end(), [&](const std::string& f) {
    return access.IsAdminOf(f);
  });
}

}  // namespace tpufleet
