// Node.dataDisks and the Compute Engine disks they name: the rules of attaching
// (tpu-api.md §2 AttachedDisk; cloud.google.com/tpu/docs/attach-durable-block-storage),
// the disks' `users`, and what the worker hosts are told.
#include <algorithm>
#include <set>

#include "emulator/api_internal.h"
#include "emulator/hosts/worker_document.h"

namespace tpufleet::emulator {
namespace {

// Disks a TPU VM may have, its boot disk included (the guide's "Maximum disks per VM").
constexpr int kMaxDisksPerVm = 128;
constexpr int kMaxDisksPerVmV6e = 32;

bool ReadOnly(const Json& attached) {
  return attached.value("mode", std::string()) == "READ_ONLY";
}

// The disk types a TPU version takes (the guide's "TPU support for Hyperdisk and
// Persistent Disk": Hyperdisk Balanced on v6e, Balanced Persistent Disk before it).
bool TypeSupported(const Family& family, std::string_view disk_type) {
  return family.api_type == "V6E" ? disk_type == "hyperdisk-balanced"
                                  : disk_type == "pd-balanced";
}

}  // namespace

std::string ApiServerImpl::WorkerInstancePath(const EmulatedNode& n, int worker) {
  return "projects/" + n.project + "/zones/" + n.zone + "/instances/" +
         hosts::WorkerHostname(n.uid, worker);
}

std::vector<std::pair<const EmulatedNode*, const Json*>> ApiServerImpl::DiskAttachmentsLocked(
    const std::string& path) const {
  std::vector<std::pair<const EmulatedNode*, const Json*>> out;
  for (const auto& [name, n] : nodes_) {
    if (!n.spec.contains("dataDisks")) {
      continue;
    }
    for (const Json& d : n.spec["dataDisks"]) {
      if (DiskPathOfSource(d.value("sourceDisk", std::string())) == path) {
        out.emplace_back(&n, &d);
      }
    }
  }
  return out;
}

std::vector<std::string> ApiServerImpl::DiskUsersLocked(const std::string& path) const {
  std::vector<std::string> users;
  for (const auto& [n, attached] : DiskAttachmentsLocked(path)) {
    for (int w = 0; w < n->type.workers; ++w) {
      users.push_back(WorkerInstancePath(*n, w));
    }
  }
  return users;
}

RpcOr<Json> ApiServerImpl::CheckDataDisksLocked(const Call& c, const std::string& node_name,
                                                const AcceleratorType& type,
                                                const Json& given) const {
  Json disks = given.is_array() ? given : Json::array();
  int limit = (type.family->api_type == "V6E" ? kMaxDisksPerVmV6e : kMaxDisksPerVm) - 1;
  if (static_cast<int>(disks.size()) > limit) {
    return InvalidArgument("Cloud TPU received a bad request. " + type.name + " takes at most " +
                           std::to_string(limit) + " data disks; " +
                           std::to_string(disks.size()) + " were given.");
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < disks.size(); ++i) {
    Json& d = disks[i];
    std::string at = "node.data_disks[" + std::to_string(i) + "]";
    std::string source = d.value("sourceDisk", std::string());
    if (source.empty()) {
      return InvalidArgument("Invalid value for field '" + at +
                             ".source_disk': \"\". A source disk is required.");
    }
    std::optional<std::string> path = DiskPathOfSource(source);
    if (!path) {
      return InvalidArgument("Invalid value for field '" + at + ".source_disk': \"" + source +
                             "\". Expected a zonal disk, projects/PROJECT/zones/ZONE/disks/NAME.");
    }
    if (!seen.insert(*path).second) {
      return InvalidArgument("Invalid value for field '" + at + ".source_disk': \"" + source +
                             "\". The disk is listed twice.");
    }
    std::string mode = d.value("mode", std::string());
    if (mode.empty() || mode == "DISK_MODE_UNSPECIFIED") {
      d["mode"] = "READ_WRITE";  // the API's default (AttachedDisk.mode)
    }
    bool read_only = ReadOnly(d);
    auto it = disks_.find(*path);
    if (it == disks_.end()) {
      return NotFound(*path);
    }
    const DiskRecord& disk = it->second;
    if (disk.zone != c.zone) {
      return InvalidArgument("Cloud TPU received a bad request. Disk '" + *path + "' is in zone " +
                             disk.zone + "; a node in " + c.zone +
                             " can attach only disks of its own zone.");
    }
    if (disk.phase != DiskRecord::Phase::kReady) {
      return RpcError{RpcCode::kFailedPrecondition,
                      "The resource '" + *path + "' is not ready (status " +
                          std::string(DiskStatusName(disk.phase)) + ").",
                      Json::array({ResourceInfoDetail(*path)})};
    }
    if (!TypeSupported(*type.family, disk.type)) {
      return InvalidArgument("Cloud TPU received a bad request. Disk '" + *path + "' is " +
                             disk.type + "; " + type.family->name + " TPU VMs take " +
                             (type.family->api_type == "V6E" ? "hyperdisk-balanced"
                                                             : "pd-balanced") +
                             " disks only.");
    }
    if (!read_only && type.workers > 1) {
      return InvalidArgument("Cloud TPU received a bad request. " + type.name + " has " +
                             std::to_string(type.workers) +
                             " TPU VMs: a disk attached to a multi-host TPU must be READ_ONLY "
                             "(disk '" + *path + "').");
    }
    if (disk.access_mode == kAccessReadOnlyMany && !read_only) {
      return InvalidArgument("Cloud TPU received a bad request. Disk '" + *path +
                             "' has access mode READ_ONLY_MANY: attach it READ_ONLY.");
    }
    // Every other node that has the disk, and whether this attachment may join them.
    int instances = type.workers;
    for (const auto& [other, attached] : DiskAttachmentsLocked(*path)) {
      if (other->name == node_name) {
        continue;
      }
      instances += other->type.workers;
      bool writer_conflict = (!read_only || !ReadOnly(*attached)) &&
                             disk.access_mode != kAccessReadWriteMany;
      bool single_conflict = disk.access_mode == kAccessReadWriteSingle;
      if (writer_conflict || single_conflict) {
        return RpcError{RpcCode::kFailedPrecondition,
                        "The disk resource '" + *path + "' is already being used by '" +
                            WorkerInstancePath(*other, 0) + "'",
                        Json::array({ResourceInfoDetail(*path)})};
      }
    }
    if (disk.access_mode == kAccessReadWriteSingle && instances > 1) {
      return InvalidArgument("Cloud TPU received a bad request. Disk '" + *path +
                             "' has access mode READ_WRITE_SINGLE and may be attached to one "
                             "TPU VM only; " + type.name + " has " +
                             std::to_string(type.workers) + ".");
    }
  }
  return disks;
}

std::vector<AttachedDiskSpec> ApiServerImpl::AttachedDisksLocked(const Json& node_spec) const {
  std::vector<AttachedDiskSpec> out;
  if (!node_spec.contains("dataDisks")) {
    return out;
  }
  for (const Json& d : node_spec["dataDisks"]) {
    std::optional<std::string> path = DiskPathOfSource(d.value("sourceDisk", std::string()));
    auto it = path ? disks_.find(*path) : disks_.end();
    if (it == disks_.end()) {
      continue;  // cannot happen: a disk in use is never deleted
    }
    out.push_back({it->second.name, it->second.image, ReadOnly(d)});
  }
  return out;
}

std::optional<RpcError> ApiServerImpl::PatchDataDisksLocked(const Call& c, EmulatedNode& n,
                                                            const Json& given, bool* changed) {
  EMULATOR_ASSIGN_OR_RETURN_RPC(
      Json disks, CheckDataDisksLocked(c, n.name, n.type,
                                       given.contains("dataDisks") ? given["dataDisks"]
                                                                   : Json::array()));
  Json before = n.spec.contains("dataDisks") ? n.spec["dataDisks"] : Json::array();
  *changed = before != disks;
  if (disks.empty()) {
    n.spec.erase("dataDisks");
  } else {
    n.spec["dataDisks"] = std::move(disks);
  }
  return std::nullopt;
}

void ApiServerImpl::PostDataDisksLocked(EmulatedNode& n) {
  PostHostCallLocked(
      n, "SetDataDisks",
      [name = n.name, disks = AttachedDisksLocked(n.spec)](WorkerHosts& h) {
        return h.SetDataDisks(name, disks);
      },
      Waiter::kStep);
}

}  // namespace tpufleet::emulator
