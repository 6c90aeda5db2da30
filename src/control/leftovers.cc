#include "control/leftovers.h"

#include <algorithm>
#include <thread>

#include "util/strings.h"

namespace tpufleet {
namespace {

bool Ignorable(const Status& s) { return s.ok() || s.code() == StatusCode::kNotFound; }

// The record ProviderSource::ForRecord needs to find a leftover's provider.
NodeRecord RecordOf(const LeftoverRecord& x) {
  NodeRecord r;
  r.fleet = x.fleet;
  r.name = x.name;
  r.provider = x.provider;
  r.project = x.project;
  r.zone = x.zone;
  r.type = x.type;
  r.capacity = x.capacity;
  return r;
}

Status DeleteOne(World& world, const LeftoverRecord& x, const DeleteOptions& options) {
  TPUFLEET_ASSIGN_OR_RETURN(CloudProvider * provider, world.providers.ForRecord(RecordOf(x)));
  Poller poller(world.clock, options.poll_min, options.poll_max, options.timeout);
  return DeleteAndWait(*provider, x.zone, x.name, x.queued, poller);
}

}  // namespace

Status DeleteAndWait(CloudProvider& provider, const std::string& zone, const std::string& name,
                     bool queued, Poller& poller) {
  if (queued) {
    Result<CloudOperation> op = provider.DeleteQueuedResource(zone, name, /*force=*/true);
    if (op.ok()) {
      TPUFLEET_TRY(WaitOperation(provider, *op, poller));
    } else if (!Ignorable(op.status())) {
      return op.status();
    }
  }
  while (true) {
    Result<CloudNode> node = provider.GetNode(zone, name);
    if (node.status().code() == StatusCode::kNotFound) {
      return Status::Ok();
    }
    TPUFLEET_TRY(node.status());
    if (node->state != NodeState::kDeleting) {
      Result<CloudOperation> op = provider.DeleteNode(zone, name);
      if (op.ok()) {
        TPUFLEET_TRY(WaitOperation(provider, *op, poller));
      } else if (!Ignorable(op.status())) {
        return op.status();
      }
    } else if (!poller.Pause()) {
      return TimeoutError("node " + name + " in " + zone + " is still DELETING");
    }
  }
}

Status RememberLeftover(World& world, const LeftoverRecord& x) {
  TPUFLEET_TRY(world.store.PutLeftover(x));
  return world.store.AddEvent({0, world.clock.Now(), x.fleet, x.name, "leftover",
                               "zone=" + x.zone + " reason=" + x.reason});
}

Result<std::vector<LeftoverOutcome>> FinishLeftovers(World& world, std::string_view fleet,
                                                     const DeleteOptions& options,
                                                     ProgressObserver& progress) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<LeftoverRecord> all, world.store.Leftovers(fleet));
  std::vector<LeftoverOutcome> out(all.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < all.size(); ++i) {
    threads.emplace_back([&, i] {
      LeftoverOutcome& o = out[i];
      o.leftover = all[i];
      const LeftoverRecord& x = o.leftover;
      std::string label = x.name + " (leftover)";
      progress.OnProgress({label, NodePhase::kDeleting, x.zone, "left by " + x.reason});
      o.status = DeleteOne(world, x, options);
      if (o.status.ok()) {
        o.status = world.store.Transaction([&]() -> Status {
          TPUFLEET_TRY(world.store.DeleteLeftover(x));
          return world.store.AddEvent({0, world.clock.Now(), x.fleet, x.name,
                                       "leftover-deleted", "zone=" + x.zone});
        });
      } else {
        o.leftover.last_error = o.status.message();
        (void)world.store.PutLeftover(o.leftover);  // the error is news; the record stays
      }
      progress.OnProgress({label, o.status.ok() ? NodePhase::kDeleted : NodePhase::kFailed,
                           x.zone, o.status.ok() ? "" : o.status.message()});
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  return out;
}

std::vector<UntrackedNode> FindUntracked(const std::vector<CloudNode>& cloud,
                                         const std::vector<std::string>& fleets,
                                         const std::vector<NodeRecord>& records,
                                         const std::vector<LeftoverRecord>& leftovers) {
  std::vector<UntrackedNode> out;
  for (const CloudNode& n : cloud) {
    auto label = n.labels.find(kFleetLabel);
    if (label == n.labels.end() ||
        std::find(fleets.begin(), fleets.end(), label->second) == fleets.end()) {
      continue;
    }
    bool known = std::any_of(records.begin(), records.end(), [&](const NodeRecord& r) {
                   return r.name == n.id && r.zone == n.zone;
                 }) ||
                 std::any_of(leftovers.begin(), leftovers.end(), [&](const LeftoverRecord& x) {
                   return x.name == n.id && x.zone == n.zone;
                 });
    if (!known) {
      // "projects/P/locations/Z/nodes/N"
      std::vector<std::string> parts = Split(n.cloud_name, '/');
      std::string project = parts.size() > 1 && parts[0] == "projects" ? parts[1] : "";
      UntrackedNode u{label->second, project, n.id, n.zone, n.state, ""};
      for (const NodeRecord& r : records) {
        if (r.name == n.id) {
          u.recorded_zone = r.zone;
        }
      }
      out.push_back(std::move(u));
    }
  }
  return out;
}

std::string UntrackedMessage(const UntrackedNode& n) {
  if (!n.recorded_zone.empty()) {
    // import refuses a second node of a name tpufleet has: only the cloud's tools can
    // delete this one.
    return "untracked: " + n.name + " in " + n.zone + " carries fleet " + n.fleet +
           "'s label but duplicates the " + n.name + " tpufleet tracks in " + n.recorded_zone +
           " (it bills all the same); delete it with `gcloud compute tpus tpu-vm delete " +
           n.name + " --project " + n.project + " --zone " + n.zone + "`";
  }
  return "untracked: " + n.name + " in " + n.zone + " carries fleet " + n.fleet +
         "'s label but tpufleet has no record of it (it bills all the same); `tpufleet "
         "import --fleet " + n.fleet + " --project " + n.project + " --zones " + n.zone + " " +
         n.name +
         "` takes it in, and `tpufleet down " + n.name + "` then deletes it";
}

}  // namespace tpufleet
