#include "control/import.h"

#include <algorithm>

#include "control/ssh_sync.h"
#include "control/wait.h"
#include "ssh/fleet_key.h"
#include "util/strings.h"

namespace tpufleet {
namespace {


// The node's ssh-keys with the fleet key appended, or "" when it is there already.
std::string WithFleetKey(const CloudNode& node, const std::string& entry) {
  auto it = node.metadata.find(kSshKeysMetadataKey);
  std::string keys = it == node.metadata.end() ? "" : it->second;
  for (const std::string& line : Split(keys, '\n')) {
    if (Trim(line) == entry) {
      return "";
    }
  }
  return keys.empty() ? entry : keys + "\n" + entry;
}

Status Adopt(World& world, CloudProvider& provider, const ImportRequest& request,
             const CloudNode& node, const FleetKey& key, ProgressObserver& progress) {
  Poller poller(world.clock, std::chrono::milliseconds(250), std::chrono::seconds(2),
                request.timeout);
  progress.OnProgress({node.id, NodePhase::kChecking, node.zone, node.state.Name()});
  if (std::string keys = WithFleetKey(node, world.login + ":" + key.public_key); !keys.empty()) {
    TPUFLEET_ASSIGN_OR_RETURN(CloudOperation op, provider.SetSshKeys(node.zone, node.id, keys));
    TPUFLEET_TRY(WaitOperation(provider, op, poller));
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<WorkerIdentity> ids,
                            provider.GetWorkerIdentities(node.zone, node.id));
  NodeRecord r;
  r.fleet = request.fleet;
  r.name = node.id;
  r.provider = request.provider;
  r.project = request.project;
  r.zone = node.zone;
  r.type = node.type;
  r.runtime_version = node.runtime_version;
  r.capacity = std::string(CapacityName(node.capacity));
  r.queued_resource = node.queued_resource;
  r.cloud_name = node.cloud_name;
  r.state = node.state;
  r.health = node.health;
  r.login = world.login;
  // The node's own labels, as a spec would give them: tpufleet's (tpufleet-*) are not the
  // user's to select by.
  for (const auto& [label, value] : node.labels) {
    if (!StartsWith(label, "tpufleet")) {
      r.labels[label] = value;
    }
  }
  r.data_disks = node.data_disks;
  r.created_at = node.create_time.value_or(world.clock.Now());
  r.updated_at = world.clock.Now();
  for (size_t i = 0; i < node.workers.size(); ++i) {
    WorkerRecord w;
    w.index = static_cast<int>(i);
    const CloudWorker& c = node.workers[i];
    w.address = c.SshAddress();
    w.internal_address = c.address;
    if (i < ids.size()) {
      w.hostname = ids[i].hostname;
      w.host_key = ids[i].host_key;
    }
    // Setup belongs to the spec of a fleet; an adopted worker is taken as it is.
    w.setup_done = true;
    r.workers.push_back(std::move(w));
  }
  return world.store.Transaction([&]() -> Status {
    TPUFLEET_TRY(world.store.PutNode(r));
    return world.store.AddEvent(
        {0, world.clock.Now(), r.fleet, r.name, "imported", "zone=" + r.zone + " state=" + r.state.Name()});
  });
}

}  // namespace

Result<std::vector<NodeOutcome>> Import(World& world, const ImportRequest& request,
                                        ProgressObserver& progress) {
  NodeRecord probe;
  probe.provider = request.provider;
  probe.project = request.project;
  TPUFLEET_ASSIGN_OR_RETURN(CloudProvider * provider, world.providers.ForRecord(probe));
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<CloudNode> found, provider->ListNodes(request.zones));
  for (const std::string& name : request.nodes) {
    if (std::none_of(found.begin(), found.end(), [&](const CloudNode& n) { return n.id == name; })) {
      return NotFoundError("no node named " + name + " in " + Join(request.zones, ", ") +
                           " of project " + request.project);
    }
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> known, world.store.Nodes(""));
  TPUFLEET_ASSIGN_OR_RETURN(FleetKey key, world.keys.Ensure());
  std::vector<NodeOutcome> out;
  for (const CloudNode& node : found) {
    bool wanted = request.nodes.empty() ||
                  std::find(request.nodes.begin(), request.nodes.end(), node.id) !=
                      request.nodes.end();
    bool tracked = std::any_of(known.begin(), known.end(), [&](const NodeRecord& r) {
      return r.name == node.id && r.zone == node.zone;
    });
    if (!wanted) {
      continue;
    }
    auto same_name = std::find_if(known.begin(), known.end(),
                                  [&](const NodeRecord& r) { return r.name == node.id; });
    NodeOutcome o{node.id, Status::Ok(), false};
    if (tracked) {
      progress.OnProgress({node.id, NodePhase::kUnchanged, node.zone, "already tracked"});
    } else if (same_name != known.end()) {
      // Node names are SSH aliases; a second one would break the SSH files.
      o.status = AlreadyExistsError("fleet " + same_name->fleet + " already has a node named " +
                                    node.id + " (in " + same_name->zone + "); not imported");
      progress.OnProgress({node.id, NodePhase::kFailed, node.zone, o.status.message()});
    } else {
      o.status = Adopt(world, *provider, request, node, key, progress);
      o.changed = o.status.ok();
      progress.OnProgress({node.id, o.status.ok() ? NodePhase::kReady : NodePhase::kFailed,
                           node.zone, o.status.ok() ? "imported" : o.status.message()});
    }
    out.push_back(std::move(o));
  }
  TPUFLEET_TRY(SyncSshFiles(world));
  return out;
}

}  // namespace tpufleet
