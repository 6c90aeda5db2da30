// One entry of a fleet spec's `nodes:`: its fields for either kind of provider, its
// defaults from the catalog, and the node ids it expands to (fleet_spec_internal.h).
#include <algorithm>
#include <set>
#include <span>

#include "core/fleet_spec_internal.h"

namespace tpufleet::fleet_spec_internal {
namespace {

Status ParseLabels(const Field& f, std::map<std::string, std::string>* labels) {
  TPUFLEET_ASSIGN_OR_RETURN(auto entries, f.Entries());
  if (entries.size() > static_cast<size_t>(kMaxLabels)) {
    return f.Error("at most " + std::to_string(kMaxLabels) +
                   " labels (GCP allows 64 and tpufleet adds its own)");
  }
  for (const auto& [key, value] : entries) {
    if (Status s = CheckLabelKey(key); !s.ok()) {
      return f.KeyError(key, s.message());
    }
    if (value.IsNull()) {
      return value.Error("expected a value: lowercase letters, digits, _ and -, at most 63");
    }
    TPUFLEET_ASSIGN_OR_RETURN(std::string v, value.String());
    TPUFLEET_TRY(At(value, CheckLabelValue(v)));
    (*labels)[key] = std::move(v);
  }
  return Status::Ok();
}

// "projects/P/zones/Z/disks/D", the form the TPU API's AttachedDisk.sourceDisk takes.
Status ParseDiskSource(const Field& f, DataDiskSpec* disk) {
  TPUFLEET_ASSIGN_OR_RETURN(disk->source, f.String());
  std::vector<std::string> parts = Split(disk->source, '/');
  auto is_name = [](const std::string& s) { return CheckDiskName(s).ok(); };
  if (parts.size() != 6 || parts[0] != "projects" || parts[2] != "zones" || parts[4] != "disks" ||
      !is_name(parts[1]) || !is_name(parts[3]) || !is_name(parts[5])) {
    return f.Error("expected a zonal disk as projects/PROJECT/zones/ZONE/disks/NAME");
  }
  disk->project = parts[1];
  disk->zone = parts[3];
  disk->name = parts[5];
  return Status::Ok();
}


// `project` is the fleet's project id: a node attaches only disks of its own project.
Status ParseDataDisks(const Field& f, std::string_view project, std::vector<DataDiskSpec>* disks) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<Field> items, f.Items());
  std::set<std::string> seen;
  for (const Field& item : items) {
    TPUFLEET_TRY(item.CheckKeys({"source", "mode", "mount"}));
    DataDiskSpec disk;
    TPUFLEET_ASSIGN_OR_RETURN(Field source, item.Require("source"));
    TPUFLEET_TRY(ParseDiskSource(source, &disk));
    bool project_number = std::all_of(project.begin(), project.end(), IsDigit);
    if (!project_number && disk.project != project) {
      return source.Error("this disk is in project " + disk.project + ", not the fleet's (" +
                          std::string(project) +
                          "); a node attaches only disks of its own project");
    }
    if (!seen.insert(disk.source).second) {
      return source.Error("this disk is listed twice on the node");
    }
    if (!disks->empty() && disk.zone != disks->front().zone) {
      return source.Error("this disk is in " + disk.zone + " but " + f.path() + "[0] is in " +
                          disks->front().zone + "; a node attaches only disks of its own zone");
    }
    if (auto mode = item.Get("mode")) {
      TPUFLEET_ASSIGN_OR_RETURN(disk.mode,
                                Choice<DiskMode>(*mode, kDiskModeSpellings));
    }
    if (auto mount = item.Get("mount")) {
      TPUFLEET_ASSIGN_OR_RETURN(disk.mount, mount->String());
      TPUFLEET_TRY(At(*mount, CheckMountPath(disk.mount)));
      for (const DataDiskSpec& other : *disks) {
        if (!other.mount.empty() &&
            (other.mount == disk.mount || StartsWith(disk.mount, other.mount + "/") ||
             StartsWith(other.mount, disk.mount + "/"))) {
          return mount->Error("this mount overlaps " + other.name + "'s (" + other.mount +
                              "); each disk needs a directory of its own");
        }
      }
    }
    disks->push_back(std::move(disk));
  }
  return Status::Ok();
}

// Fields only one kind of provider understands; the other kind gets a clear refusal
// instead of "unknown field".
constexpr std::string_view kTpuOnlyFields[] = {
    "type", "runtime_version", "zones", "capacity", "queued", "count", "data_disks", "ttl", "idle",
    "spot_fallback"};
constexpr std::string_view kSshOnlyFields[] = {"hosts", "ssh_user", "port"};

Status ParseTpuNode(const Field& f, const FleetSpec& fleet, const Catalog& catalog,
                    NodeSpec* node) {
  TPUFLEET_ASSIGN_OR_RETURN(Field type_field, f.Require("type"));
  TPUFLEET_ASSIGN_OR_RETURN(std::string type_name, Word(type_field));
  Result<AcceleratorType> type = catalog.Lookup(type_name);
  if (!type.ok()) {
    return type_field.Error(type.status().message());
  }
  const Family& fam = *type->family;
  node->type = type->name;
  node->family = fam.name;
  node->chips = type->chips;
  node->workers = type->workers;

  if (auto rt = f.Get("runtime_version")) {
    TPUFLEET_ASSIGN_OR_RETURN(node->runtime_version, Word(*rt));
    const auto& valid = fam.runtime_versions;
    if (std::find(valid.begin(), valid.end(), node->runtime_version) == valid.end()) {
      return rt->Error("runtime version " + QuoteForMessage(node->runtime_version) +
                       " is not known for " + fam.name + DidYouMean(node->runtime_version, valid) +
                       "; " + fam.name + " runtime versions: " + Join(valid, ", ") + " (" +
                       std::string(kCatalogHint) + ")");
    }
  } else if (!fam.runtime_versions.empty()) {
    node->runtime_version = fam.runtime_versions.front();
    node->runtime_version_defaulted = true;
  } else {
    return f.KeyError(
        "type", "the catalog lists no runtime version for " + fam.name + "; give runtime_version");
  }

  if (auto count = f.Get("count")) {
    TPUFLEET_ASSIGN_OR_RETURN(long long n, count->Int());
    if (n < 1 || n > kMaxCount) {
      return count->Error("expected a whole number from 1 to " + std::to_string(kMaxCount));
    }
    node->count = static_cast<int>(n);
  }

  // Disks before zones: a disk pins the node to its zone, which is then the default.
  std::optional<Field> disks_field = f.Get("data_disks");
  if (disks_field) {
    TPUFLEET_TRY(ParseDataDisks(*disks_field, fleet.project, &node->data_disks));
  }
  // A read-write disk attaches to one VM: not to several slices, nor to a pod's workers.
  for (size_t i = 0; i < node->data_disks.size(); ++i) {
    if (node->data_disks[i].mode != DiskMode::kReadWrite) {
      continue;
    }
    std::string why;
    if (node->count > 1) {
      why = "this entry has count " + std::to_string(node->count);
    } else if (node->workers > 1) {
      why = node->type + " has " + std::to_string(node->workers) + " worker VMs";
    }
    if (!why.empty()) {
      TPUFLEET_ASSIGN_OR_RETURN(auto items, disks_field->Items());
      TPUFLEET_ASSIGN_OR_RETURN(Field mode, items[i].Require("mode"));
      return mode.Error("a read-write disk attaches to one VM at a time and " + why +
                        "; use read-only");
    }
  }

  auto offers = [&](const std::string& zone) {
    return std::find(fam.zones.begin(), fam.zones.end(), zone) != fam.zones.end();
  };
  auto not_offered = [&](const std::string& zone) {
    return catalog.ZoneNotOffered(fam, zone) + " (" + std::string(kCatalogHint) + ")";
  };
  if (auto zones = f.Get("zones")) {
    TPUFLEET_ASSIGN_OR_RETURN(auto items, StringItems(*zones, kMaxWordBytes));
    if (items.empty()) {
      return zones->Error("expected at least one zone; leave zones out to use every zone that " +
                          ("offers " + fam.name));
    }
    for (auto& [zone, item] : items) {
      if (!offers(zone)) {
        return item.Error(not_offered(zone));
      }
      if (std::find(node->zones.begin(), node->zones.end(), zone) != node->zones.end()) {
        return item.Error(zone + " is listed twice");
      }
      if (!node->data_disks.empty() && zone != node->data_disks.front().zone) {
        return item.Error("the node's data disk is in " + node->data_disks.front().zone +
                          " and a node attaches only disks of its own zone; list only " +
                          node->data_disks.front().zone);
      }
      node->zones.push_back(std::move(zone));
    }
  } else if (!node->data_disks.empty()) {
    const std::string& zone = node->data_disks.front().zone;
    if (!offers(zone)) {
      TPUFLEET_ASSIGN_OR_RETURN(auto items, disks_field->Items());
      TPUFLEET_ASSIGN_OR_RETURN(Field source, items[0].Require("source"));
      return source.Error("the disk is in " + zone + ", which does not offer " + fam.name + "; " +
                          fam.name + " is offered in " + Join(fam.zones, ", "));
    }
    node->zones = {zone};
    node->zones_defaulted = true;
  } else {
    if (fam.zones.empty()) {
      return f.KeyError("type", "the catalog lists no zone for " + fam.name + "; give zones");
    }
    node->zones = fam.zones;
    node->zones_defaulted = true;
  }

  if (auto cap = f.Get("capacity")) {
    // The old name still appears in guides; say what it became.
    if (cap->String().ok() && *cap->String() == "preemptible") {
      return cap->Error("preemptible TPUs are now called spot; write capacity: spot");
    }
    TPUFLEET_ASSIGN_OR_RETURN(node->capacity,
                              Choice<Capacity>(*cap, kCapacitySpellings));
  }

  // `queued: true`, or a mapping when the request has a deadline.
  if (auto q = f.Get("queued")) {
    if (q->IsMap()) {
      TPUFLEET_TRY(q->CheckKeys({"valid_until"}));
      QueuedSpec queued;
      if (auto until = q->Get("valid_until")) {
        TPUFLEET_ASSIGN_OR_RETURN(queued.valid_until, PositiveDuration(*until));
      }
      node->queued = queued;
    } else {
      Result<bool> on = q->Bool();
      if (!on.ok()) {
        return q->Error("expected true, false, or {valid_until: DURATION}");
      }
      if (*on) {
        node->queued = QueuedSpec{};
      }
    }
  }

  if (auto ttl = f.Get("ttl")) {
    TPUFLEET_ASSIGN_OR_RETURN(node->ttl, PositiveDuration(*ttl));
  }

  if (auto idle = f.Get("idle")) {
    TPUFLEET_TRY(idle->CheckKeys({"after", "action"}));
    IdlePolicy policy;
    TPUFLEET_ASSIGN_OR_RETURN(Field after, idle->Require("after"));
    TPUFLEET_ASSIGN_OR_RETURN(policy.after, PositiveDuration(after));
    if (auto action = idle->Get("action")) {
      TPUFLEET_ASSIGN_OR_RETURN(policy.action,
                                Choice<IdleAction>(*action, kIdleActionSpellings));
      if (policy.action == IdleAction::kStop && node->workers > 1) {
        return action->Error("TPU pods cannot be stopped, and " + node->type + " has " +
                             std::to_string(node->workers) +
                             " worker VMs; use delete (data disks are kept)");
      }
    }
    node->idle = policy;
  }

  if (auto fallback = f.Get("spot_fallback")) {
    if (node->capacity != Capacity::kSpot) {
      return f.KeyError("spot_fallback", "only for capacity: spot (this node is " +
                                             std::string(CapacityName(node->capacity)) + ")");
    }
    TPUFLEET_TRY(fallback->CheckKeys({"after", "within"}));
    SpotFallback fb;
    TPUFLEET_ASSIGN_OR_RETURN(Field after, fallback->Require("after"));
    TPUFLEET_ASSIGN_OR_RETURN(long long n, after.Int());
    if (n < 1 || n > kMaxSpotFallbackAfter) {
      return after.Error("expected a number of losses from 1 to " +
                         std::to_string(kMaxSpotFallbackAfter));
    }
    fb.after = static_cast<int>(n);
    TPUFLEET_ASSIGN_OR_RETURN(Field within, fallback->Require("within"));
    TPUFLEET_ASSIGN_OR_RETURN(fb.within, PositiveDuration(within));
    node->spot_fallback = fb;
  }
  return Status::Ok();
}

Status ParseSshNode(const Field& f, NodeSpec* node) {
  TPUFLEET_ASSIGN_OR_RETURN(Field hosts, f.Require("hosts"));
  // 253: the longest DNS name.
  TPUFLEET_ASSIGN_OR_RETURN(auto items, StringItems(hosts, 253));
  if (items.empty()) {
    return hosts.Error("expected at least one host address");
  }
  for (auto& [host, item] : items) {
    TPUFLEET_TRY(At(item, CheckHostAddress(host)));
    if (std::find(node->hosts.begin(), node->hosts.end(), host) != node->hosts.end()) {
      return item.Error(host + " is listed twice");
    }
    node->hosts.push_back(std::move(host));
  }
  // Each host is one worker: exec and setup fan out to all of them, as on a pod.
  node->workers = static_cast<int>(node->hosts.size());
  if (auto user = f.Get("ssh_user")) {
    TPUFLEET_ASSIGN_OR_RETURN(node->ssh_user, user->String());
    TPUFLEET_TRY(At(*user, CheckLoginName(node->ssh_user)));
  }
  if (auto port = f.Get("port")) {
    TPUFLEET_ASSIGN_OR_RETURN(long long p, port->Int());
    if (p < 1 || p > 65535) {
      return port->Error("expected a TCP port from 1 to 65535");
    }
    node->port = static_cast<int>(p);
  }
  return Status::Ok();
}

}  // namespace

Status ParseNode(const Field& f, const FleetSpec& fleet, const Catalog& catalog,
                 const std::map<std::string, std::string>& fleet_users, NodeSpec* node) {
  // A field of the other kind of provider gets a reason, not just "unknown field".
  bool ssh = fleet.provider == Provider::kSshHosts;
  for (std::string_view key : ssh ? std::span<const std::string_view>(kTpuOnlyFields)
                                  : std::span<const std::string_view>(kSshOnlyFields)) {
    if (f.IsMap() && f.Get(key)) {
      return f.KeyError(key, ssh ? "not used with provider ssh-hosts: those machines already "
                                   "exist, and tpufleet never creates, places or deletes them"
                                 : "only for provider ssh-hosts; a Cloud TPU node's workers are "
                                   "created by tpufleet and found through the TPU API");
    }
  }
  if (ssh) {
    TPUFLEET_TRY(f.CheckKeys({"name", "hosts", "ssh_user", "port", "labels", "setup", "users"}));
  } else {
    TPUFLEET_TRY(f.CheckKeys({"name", "type", "runtime_version", "zones", "capacity", "queued",
                              "count", "labels", "setup", "data_disks", "users", "ttl", "idle",
                              "spot_fallback"}));
  }
  node->line = f.line();
  TPUFLEET_ASSIGN_OR_RETURN(Field name, f.Require("name"));
  TPUFLEET_ASSIGN_OR_RETURN(node->name, name.String());
  TPUFLEET_TRY(At(name, CheckNodeName(node->name)));
  if (fleet.provider == Provider::kSshHosts) {
    TPUFLEET_TRY(ParseSshNode(f, node));
  } else {
    TPUFLEET_TRY(ParseTpuNode(f, fleet, catalog, node));
  }
  // Again now that count is known: count > 1 needs room for the "-N" suffix.
  TPUFLEET_TRY(At(name, CheckNodeName(node->name, node->count)));
  if (node->count == 1) {
    node->names = {node->name};
  } else {
    for (int i = 0; i < node->count; ++i) {
      node->names.push_back(node->name + "-" + std::to_string(i));
    }
  }
  if (auto labels = f.Get("labels")) {
    TPUFLEET_TRY(ParseLabels(*labels, &node->labels));
  }
  if (auto setup = f.Get("setup")) {
    TPUFLEET_ASSIGN_OR_RETURN(node->setup, setup->String());
    if (node->setup.size() > kMaxSetupBytes) {
      return setup->Error("the script is " + std::to_string(node->setup.size() / 1024) +
                          " KiB; at most 256 KiB travels in instance metadata (copy a larger "
                          "script to the nodes and run it from here)");
    }
    if (node->setup.find('\0') != std::string::npos) {
      return setup->Error("the script contains a NUL byte");
    }
  }
  if (auto users = f.Get("users")) {
    TPUFLEET_TRY(ParseUsers(*users, fleet_users, &node->users));
  }
  return Status::Ok();
}

}  // namespace tpufleet::fleet_spec_internal
