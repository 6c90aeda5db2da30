#include "control/down.h"

#include <thread>

#include "control/ssh_sync.h"

namespace tpufleet {
namespace {

// Deletes one node in the cloud and waits until it is gone.
Status DeleteInCloud(World& world, const NodeRecord& r, const DownOptions& options,
                     ProgressObserver& progress) {
  TPUFLEET_ASSIGN_OR_RETURN(CloudProvider * provider, world.providers.ForRecord(r));
  Poller poller(world.clock, options.poll_min, options.poll_max, options.timeout);
  progress.OnProgress({r.name, NodePhase::kDeleting, r.zone, ""});
  return DeleteAndWait(*provider, r.zone, r.name, !r.queued_resource.empty(), poller);
}

}  // namespace

DownReport Down(World& world, const std::vector<NodeRecord>& nodes, const DownOptions& options,
                ProgressObserver& progress,
                const std::optional<std::vector<std::string>>& leftover_fleets) {
  DownReport report;
  for (const std::string& fleet : leftover_fleets.value_or(std::vector<std::string>{""})) {
    Result<std::vector<LeftoverOutcome>> leftovers =
        FinishLeftovers(world, fleet, options, progress);
    if (!leftovers.ok()) {
      report.leftovers_status = leftovers.status();
      break;
    }
    report.leftovers.insert(report.leftovers.end(), leftovers->begin(), leftovers->end());
  }
  std::vector<NodeOutcome>& out = report.nodes;
  out.resize(nodes.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < nodes.size(); ++i) {
    threads.emplace_back([&, i] {
      const NodeRecord& r = nodes[i];
      out[i].node = r.name;
      bool ssh_hosts = r.provider == ProviderName(Provider::kSshHosts);
      Status s = !ssh_hosts ? DeleteInCloud(world, r, options, progress) : Status::Ok();
      if (s.ok()) {
        s = world.store.Transaction([&]() -> Status {
          TPUFLEET_TRY(world.store.DeleteNode(r.fleet, r.name));
          return world.store.AddEvent({0, world.clock.Now(), r.fleet, r.name, "deleted",
                                       ssh_hosts ? "forgotten" : "zone=" + r.zone});
        });
      }
      out[i].status = s;
      out[i].changed = s.ok();
      progress.OnProgress({r.name, s.ok() ? NodePhase::kDeleted : NodePhase::kFailed, r.zone,
                           s.ok() ? (ssh_hosts ? "forgotten; the machines are untouched" : "")
                                  : s.message()});
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  if (Status s = SyncSshFiles(world); !s.ok()) {
    for (NodeOutcome& o : out) {
      if (o.status.ok()) {
        o.status = s.WithContext("deleted, but the SSH files could not be rewritten");
      }
    }
  }
  return report;
}

}  // namespace tpufleet
