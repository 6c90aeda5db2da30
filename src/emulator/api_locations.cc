// The emulator's locations and what its catalog offers in them: the locations,
// accelerator types and runtime versions routes, and generateServiceIdentity.
#include <algorithm>
#include <set>

#include "emulator/api_internal.h"
#include "util/log.h"
#include "util/strings.h"
#include "util/timestamp.h"

namespace tpufleet::emulator {

HttpResponse ApiServerImpl::ListLocations(const Call& c) {
  std::vector<std::string> zones = catalog_.AllZones();
  std::sort(zones.begin(), zones.end());
  std::vector<std::pair<std::string, Json>> items;
  for (const std::string& z : zones) {
    std::string name = "projects/" + c.project + "/locations/" + z;
    items.emplace_back(z, Json{{"name", name}, {"locationId", z}});
  }
  return Respond(Page(c, items, "locations", /*sorted=*/true));
}

HttpResponse ApiServerImpl::GetLocation(const Call& c) {
  if (!ZoneKnown(c.zone)) {
    return ErrorResponse(NotFound(c.parent));
  }
  return JsonResponse(Json{{"name", c.parent}, {"locationId", c.zone}});
}

HttpResponse ApiServerImpl::GenerateServiceIdentity(const Call& c) {
  return JsonResponse(Json{
      {"identity",
       {{"email", "service-" + ProjectNumber(c.project) + "@cloud-tpu.iam.gserviceaccount.com"}}}});
}

namespace {

Json AcceleratorTypeJson(const std::string& parent, const Family& f, int size) {
  std::string type = f.name + "-" + std::to_string(size);
  Json config{{"type", f.api_type}};
  if (auto t = f.topologies.find(size); t != f.topologies.end()) {
    config["topology"] = t->second;
  }
  return Json{{"name", parent + "/acceleratorTypes/" + type},
              {"type", type},
              {"acceleratorConfigs", Json::array({config})}};
}

}  // namespace

HttpResponse ApiServerImpl::ListAcceleratorTypes(const Call& c) {
  std::vector<std::pair<std::string, Json>> items;
  for (const Family* f : FamiliesInZone(c.zone)) {
    for (int size : f->sizes) {
      items.emplace_back(f->name + "-" + std::to_string(size),
                         AcceleratorTypeJson(c.parent, *f, size));
    }
  }
  return Respond(Page(c, items, "acceleratorTypes", /*sorted=*/false));
}

HttpResponse ApiServerImpl::GetAcceleratorType(const Call& c, const std::string& id) {
  for (const Family* f : FamiliesInZone(c.zone)) {
    for (int size : f->sizes) {
      if (f->name + "-" + std::to_string(size) == id) {
        return JsonResponse(AcceleratorTypeJson(c.parent, *f, size));
      }
    }
  }
  return ErrorResponse(NotFound(c.parent + "/acceleratorTypes/" + id));
}

HttpResponse ApiServerImpl::ListRuntimeVersions(const Call& c) {
  std::vector<std::pair<std::string, Json>> items;
  std::set<std::string> seen;
  for (const Family* f : FamiliesInZone(c.zone)) {
    for (const std::string& v : f->runtime_versions) {
      if (seen.insert(v).second) {
        items.emplace_back(v, Json{{"name", c.parent + "/runtimeVersions/" + v}, {"version", v}});
      }
    }
  }
  std::sort(items.begin(), items.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return Respond(Page(c, items, "runtimeVersions", /*sorted=*/true));
}

HttpResponse ApiServerImpl::GetRuntimeVersion(const Call& c, const std::string& id) {
  for (const Family* f : FamiliesInZone(c.zone)) {
    if (std::find(f->runtime_versions.begin(), f->runtime_versions.end(), id) !=
        f->runtime_versions.end()) {
      return JsonResponse(Json{{"name", c.parent + "/runtimeVersions/" + id}, {"version", id}});
    }
  }
  return ErrorResponse(NotFound(c.parent + "/runtimeVersions/" + id));
}

}  // namespace tpufleet::emulator
