#include "control/up.h"

#include <algorithm>

#include "control/fleet_owner.h"
#include "control/up_steps.h"
#include "ssh/fleet_key.h"
#include "util/event_loop.h"
#include "util/strings.h"

namespace tpufleet {

std::string SshKeysMetadata(const std::string& login, const std::string& fleet_public_key,
                            const std::vector<UserSpec>& users) {
  std::vector<std::string> lines;
  if (!fleet_public_key.empty()) {
    lines.push_back(login + ":" + fleet_public_key);
  }
  for (const UserSpec& u : users) {
    for (const std::string& k : u.keys) {
      lines.push_back(u.name + ":" + k);
    }
  }
  return Join(lines, "\n");
}

Result<UpReport> Up(const FleetSpec& fleet, const Catalog& catalog, World& world,
                    const UpOptions& options, ProgressObserver& progress) {
  TPUFLEET_ASSIGN_OR_RETURN(CloudProvider * provider, world.providers.ForFleet(fleet));
  // ssh-hosts nodes too: up adds it to their logins' authorized_keys (LoginScript).
  TPUFLEET_ASSIGN_OR_RETURN(FleetKey key, world.keys.Ensure());
  TPUFLEET_TRY(RecordFleet(world.store, fleet,
                           options.person.empty() ? world.login : options.person,
                           world.clock.Now()));
  UpReport report;
  DeleteOptions deleting;
  deleting.poll_min = options.poll_min;
  deleting.poll_max = options.poll_max;
  TPUFLEET_ASSIGN_OR_RETURN(report.leftovers,
                            FinishLeftovers(world, fleet.name, deleting, progress));
  TPUFLEET_ASSIGN_OR_RETURN(UpPlan plan, PlanUp(fleet, catalog, world));
  const std::vector<NodePlan>& plans = plan.nodes;
  report.untracked = std::move(plan.untracked);
  // One event loop drives every node's steps and their SSH jobs; it waits only when no
  // step is due and no worker has anything to say.
  EventLoop loop(world.clock);
  {
    up_internal::UpSteps steps(world, fleet, plans, *provider, options, progress, &key, loop);
    TPUFLEET_TRY(loop.RunUntil([&] { return steps.done(); }));
    report.nodes = steps.Outcomes();
  }

  TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> records, world.store.Nodes(fleet.name));
  for (const NodeRecord& r : records) {
    bool in_spec = std::any_of(plans.begin(), plans.end(),
                               [&](const NodePlan& p) { return p.node == r.name; });
    if (!in_spec) {
      report.not_in_spec.push_back(r.name);
    }
  }
  TPUFLEET_ASSIGN_OR_RETURN(report.leftovers_left, world.store.Leftovers(fleet.name));
  return report;
}

}  // namespace tpufleet
