// Compute Engine disks and diskTypes under /compute/v1/projects/{p}/ (compute_api.cc
// routes here): disks insert, get, list, aggregatedList, delete, with zone operations;
// diskTypes get and list. The model is compute_disks.h; attaching is
// compute_disks_attach.cc.
#include "emulator/api_internal.h"
#include "util/encoding.h"
#include "util/log.h"
#include "util/strings.h"

namespace tpufleet::emulator {
namespace {

// What Compute shows as the fingerprint of no labels.
constexpr std::string_view kEmptyLabelFingerprint = "42WmSpB8rSM=";
// Every disk's block size (Compute's default; 16384 is the other choice).
constexpr std::string_view kPhysicalBlockSizeBytes = "4096";

std::string LabelFingerprint(const Json& labels) {
  if (labels.empty()) {
    return std::string(kEmptyLabelFingerprint);
  }
  uint64_t h = Fnv1a64(labels.dump());
  std::string bytes;
  for (int i = 0; i < 8; ++i) {
    bytes += static_cast<char>((h >> (8 * i)) & 0xff);
  }
  return Base64Encode(bytes);
}

}  // namespace

Json ApiServerImpl::RenderDiskLocked(const DiskRecord& d, const std::string& root) const {
  std::string zone = root + "projects/" + d.project + "/zones/" + d.zone;
  Json j{{"kind", "compute#disk"},
         {"id", d.id},
         {"creationTimestamp", ComputeTimestamp(d.created)},
         {"name", d.name},
         {"sizeGb", std::to_string(d.size_gb)},
         {"zone", zone},
         {"status", DiskStatusName(d.phase)},
         {"selfLink", root + d.path()},
         {"type", zone + "/diskTypes/" + d.type},
         {"labelFingerprint", LabelFingerprint(d.labels)},
         {"physicalBlockSizeBytes", kPhysicalBlockSizeBytes}};
  if (!d.description.empty()) {
    j["description"] = d.description;
  }
  if (!d.labels.empty()) {
    j["labels"] = d.labels;
  }
  if (!d.access_mode.empty()) {
    j["accessMode"] = d.access_mode;
  }
  Json users = Json::array();
  for (const std::string& u : DiskUsersLocked(d.path())) {
    users.push_back(root + u);
  }
  if (!users.empty()) {
    j["users"] = std::move(users);
  }
  return j;
}

void ApiServerImpl::AdvanceDisksLocked(Clock::MonoTime now, Clock::WallTime wall) {
  for (auto it = disks_.begin(); it != disks_.end();) {
    DiskRecord& d = it->second;
    if (d.phase == DiskRecord::Phase::kReady || now < d.due) {
      ++it;
      continue;
    }
    compute_ops_.Finish(d.op, wall);
    if (d.phase == DiskRecord::Phase::kCreating) {
      d.phase = DiskRecord::Phase::kReady;
      d.op.clear();
      ++it;
      continue;
    }
    if (Status s = disk_images_.Remove(d.image); !s.ok()) {
      Log(LogLevel::kWarn, "emulator: deleting disk " + d.path() + ": " + s.message());
    }
    it = disks_.erase(it);
  }
}

HttpResponse ApiServerImpl::InsertDisk(const Call& c, const std::string&) {
  EMULATOR_ASSIGN_OR_RESPOND(Json body, ParseComputeBody(c));
  Result<DiskInsert> in = ParseDiskInsert(body, c.project, c.zone);
  if (!in.ok()) {
    return ErrorResponse(ComputeInvalid(in.status().message()));
  }
  std::string path = DiskRecord::DiskPath(c.project, c.zone, in->name);
  if (disks_.count(path)) {
    return ErrorResponse(
        ComputeError{409, "alreadyExists", "The resource '" + path + "' already exists", ""});
  }
  Result<std::string> image = disk_images_.Create(c.project, c.zone, in->name, in->size_gb);
  if (!image.ok()) {
    return ErrorResponse(image.status().code() == StatusCode::kInvalidArgument
                             ? ComputeInvalid(image.status().message())
                             : ComputeError{500, "backendError", image.status().message(), ""});
  }
  DiskRecord d;
  d.name = in->name;
  d.project = c.project;
  d.zone = c.zone;
  d.id = NewUidLocked();
  d.type = in->type;
  d.size_gb = in->size_gb;
  d.description = in->description;
  d.labels = in->labels;
  d.access_mode = in->access_mode;
  d.created = c.wall;
  d.due = c.now + Scaled(config_.timings.disk_create, c.now);
  d.image = *image;
  ComputeOperation& op = StartComputeOperationLocked(c, c.zone, "insert", path, d.id);
  d.op = op.Path();
  disks_.emplace(path, std::move(d));
  return JsonResponse(ComputeOperations::Render(op, ComputeRoot(*c.req)));
}

HttpResponse ApiServerImpl::GetDisk(const Call& c, const std::string& id) {
  auto it = disks_.find(DiskRecord::DiskPath(c.project, c.zone, id));
  if (it == disks_.end()) {
    return ErrorResponse(ComputeNotFound(DiskRecord::DiskPath(c.project, c.zone, id)));
  }
  return JsonResponse(RenderDiskLocked(it->second, ComputeRoot(*c.req)));
}

ComputeOr<Json> ApiServerImpl::DiskPageLocked(const Call& c, const std::string& prefix) const {
  std::string root = ComputeRoot(*c.req);
  std::vector<std::pair<std::string, Json>> items;
  for (auto it = disks_.lower_bound(prefix); it != disks_.end() && StartsWith(it->first, prefix);
       ++it) {
    items.emplace_back(it->first, RenderDiskLocked(it->second, root));
  }
  return ComputePage(c, items);
}

HttpResponse ApiServerImpl::ListDisks(const Call& c, const std::string&) {
  std::string root = ComputeRoot(*c.req);
  std::string prefix = DiskRecord::DiskPath(c.project, c.zone, "");
  EMULATOR_ASSIGN_OR_RESPOND(Json out, DiskPageLocked(c, prefix));
  out["kind"] = "compute#diskList";
  out["id"] = prefix.substr(0, prefix.size() - 1);
  out["selfLink"] = root + out["id"].get<std::string>();
  return JsonResponse(out);
}

HttpResponse ApiServerImpl::AggregatedListDisks(const Call& c, const std::string& id) {
  if (id != "disks") {
    return ErrorResponse(ComputeNotFound("projects/" + c.project + "/aggregated/" + id));
  }
  std::string root = ComputeRoot(*c.req);
  EMULATOR_ASSIGN_OR_RESPOND(Json page, DiskPageLocked(c, "projects/" + c.project + "/zones/"));
  // Items by scope ("zones/Z": {"disks": […]}); zones without any are left out.
  Json scoped = Json::object();
  for (const Json& disk : page["items"]) {
    std::string zone = disk["zone"].get<std::string>();
    scoped["zones/" + zone.substr(zone.rfind('/') + 1)]["disks"].push_back(disk);
  }
  Json out{{"kind", "compute#diskAggregatedList"},
           {"id", "projects/" + c.project + "/aggregated/disks"},
           {"items", scoped},
           {"selfLink", root + "projects/" + c.project + "/aggregated/disks"}};
  if (page.contains("nextPageToken")) {
    out["nextPageToken"] = page["nextPageToken"];
  }
  return JsonResponse(out);
}

HttpResponse ApiServerImpl::DeleteDisk(const Call& c, const std::string& id) {
  std::string path = DiskRecord::DiskPath(c.project, c.zone, id);
  auto it = disks_.find(path);
  if (it == disks_.end()) {
    return ErrorResponse(ComputeNotFound(path));
  }
  DiskRecord& d = it->second;
  if (d.phase != DiskRecord::Phase::kReady) {
    return ErrorResponse(ComputeError{400, "resourceNotReady",
                                      "The resource '" + path + "' is not ready", ""});
  }
  if (std::vector<std::string> users = DiskUsersLocked(path); !users.empty()) {
    return ErrorResponse(ComputeError{400, "resourceInUseByAnotherResource",
                                      "The disk resource '" + path +
                                          "' is already being used by '" + users[0] + "'",
                                      ""});
  }
  d.phase = DiskRecord::Phase::kDeleting;
  d.due = c.now + Scaled(config_.timings.disk_delete, c.now);
  ComputeOperation& op = StartComputeOperationLocked(c, c.zone, "delete", path, d.id);
  d.op = op.Path();
  return JsonResponse(ComputeOperations::Render(op, ComputeRoot(*c.req)));
}

Json ApiServerImpl::RenderDiskType(const DiskTypeInfo& t, const Call& c) const {
  std::string zone = ComputeRoot(*c.req) + "projects/" + c.project + "/zones/" + c.zone;
  return Json{{"kind", "compute#diskType"},
              {"id", std::to_string(Fnv1a64(t.name) % 100000 + 30000)},
              {"creationTimestamp", "1969-12-31T16:00:00.000-08:00"},
              {"name", t.name},
              {"description", t.description},
              {"validDiskSize", std::to_string(t.min_gb) + "GB-" + std::to_string(t.max_gb) + "GB"},
              {"zone", zone},
              {"selfLink", zone + "/diskTypes/" + std::string(t.name)},
              {"defaultDiskSizeGb", std::to_string(t.default_gb)}};
}

HttpResponse ApiServerImpl::GetDiskType(const Call& c, const std::string& id) {
  const DiskTypeInfo* t = FindDiskType(id);
  if (t == nullptr) {
    return ErrorResponse(ComputeNotFound("projects/" + c.project + "/zones/" + c.zone +
                                         "/diskTypes/" + id));
  }
  return JsonResponse(RenderDiskType(*t, c));
}

HttpResponse ApiServerImpl::ListDiskTypes(const Call& c, const std::string&) {
  std::vector<std::pair<std::string, Json>> items;
  for (const DiskTypeInfo& t : DiskTypes()) {
    items.emplace_back(std::string(t.name), RenderDiskType(t, c));
  }
  EMULATOR_ASSIGN_OR_RESPOND(Json out, ComputePage(c, items));
  std::string id = "projects/" + c.project + "/zones/" + c.zone + "/diskTypes";
  out["kind"] = "compute#diskTypeList";
  out["id"] = id;
  out["selfLink"] = ComputeRoot(*c.req) + id;
  return JsonResponse(out);
}

}  // namespace tpufleet::emulator
