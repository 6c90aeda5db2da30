#include "control/down.h"

#include <thread>

#include "control/ssh_sync.h"
#include "control/wait.h"

namespace tpufleet {
namespace {

bool Ignorable(const Status& s) { return s.ok() || s.code() == StatusCode::kNotFound; }

// Deletes one node in the cloud and waits until it is gone.
Status DeleteInCloud(World& world, const NodeRecord& r, const DownOptions& options,
                     ProgressObserver& progress) {
  TPUFLEET_ASSIGN_OR_RETURN(CloudProvider * provider, world.providers.ForRecord(r));
  Poller poller(world.clock, options.poll_min, options.poll_max, options.timeout);
  progress.OnProgress({r.name, NodePhase::kDeleting, r.zone, ""});
  if (!r.queued_resource.empty()) {
    // force: the queued resource takes its node with it.
    Result<CloudOperation> op = provider->DeleteQueuedResource(r.zone, r.name, true);
    if (op.ok()) {
      TPUFLEET_TRY(WaitOperation(*provider, *op, poller));
    } else if (!Ignorable(op.status())) {
      return op.status();
    }
  }
  while (true) {
    Result<CloudNode> node = provider->GetNode(r.zone, r.name);
    if (node.status().code() == StatusCode::kNotFound) {
      return Status::Ok();
    }
    TPUFLEET_TRY(node.status());
    if (node->state != "DELETING") {
      Result<CloudOperation> op = provider->DeleteNode(r.zone, r.name);
      if (op.ok()) {
        TPUFLEET_TRY(WaitOperation(*provider, *op, poller));
      } else if (!Ignorable(op.status())) {
        return op.status();
      }
    } else if (!poller.Pause()) {
      return TimeoutError("node " + r.name + " is still DELETING");
    }
  }
}

}  // namespace

std::vector<NodeOutcome> Down(World& world, const std::vector<NodeRecord>& nodes,
                              const DownOptions& options, ProgressObserver& progress) {
  std::vector<NodeOutcome> out(nodes.size());
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
  return out;
}

}  // namespace tpufleet
