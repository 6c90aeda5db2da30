// Compute's projects.get and projects.setCommonInstanceMetadata: the project's common
// instance metadata, which every worker of every node of the project serves under
// project/attributes/ (WorkerHosts::SetProjectMetadata). Its `ssh-keys` are the
// "project-wide SSH keys" of the console's Compute Engine > Metadata > SSH Keys.
//
// A set carries the fingerprint of the metadata it was read with; a stale one is
// refused with 412 conditionNotMet, so that two writers cannot lose each other's keys.
// The global operation it returns is DONE once every running worker has the new
// metadata.
#include <algorithm>
#include <regex>

#include "emulator/api_internal.h"
#include "util/encoding.h"
#include "util/log.h"
#include "util/strings.h"

namespace tpufleet::emulator {

namespace {

// Compute's limits on metadata (compute/docs/metadata/setting-custom-metadata#limitations).
constexpr size_t kMaxMetadataKeyBytes = 128;
constexpr size_t kMaxMetadataValueBytes = 256 * 1024;
constexpr size_t kMaxMetadataTotalBytes = 512 * 1024;

// Compute's fingerprints are 8 bytes in URL-safe base64 ("-goaeN2SGek="); the
// emulator's are a hash of the items, so an unchanged set keeps its fingerprint.
std::string MetadataFingerprint(const std::vector<std::pair<std::string, std::string>>& items) {
  std::string text;
  for (const auto& [k, v] : items) {
    text += k + '\0' + v + '\0';
  }
  uint64_t h = Fnv1a64(text);
  std::string bytes;
  for (int i = 0; i < 8; ++i) {
    bytes.push_back(static_cast<char>((h >> (8 * i)) & 0xff));
  }
  std::string b64 = Base64Encode(bytes);
  std::replace(b64.begin(), b64.end(), '+', '-');
  std::replace(b64.begin(), b64.end(), '/', '_');
  return b64;
}

// The items of a Metadata body, checked as Compute checks them.
ComputeOr<std::vector<std::pair<std::string, std::string>>> ParseMetadataItems(const Json& body) {
  static const std::regex kKey("[a-zA-Z0-9_-]{1,128}");
  std::vector<std::pair<std::string, std::string>> items;
  const Json& list = body.contains("items") ? body["items"] : Json::array();
  if (!list.is_array()) {
    return ComputeInvalid("Invalid value for field 'resource.items': must be a list.");
  }
  size_t total = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    std::string at = "resource.items[" + std::to_string(i) + "]";
    const Json& item = list[i];
    if (!item.is_object() || !item.contains("key") || !item["key"].is_string()) {
      return ComputeInvalid("Required field '" + at + ".key' not specified");
    }
    std::string key = item["key"];
    if (!std::regex_match(key, kKey) || key.size() > kMaxMetadataKeyBytes) {
      return ComputeInvalid("Invalid value for field '" + at + ".key': '" + key +
                            "'. Must be a match of regex '[a-zA-Z0-9-_]{1,128}'");
    }
    std::string value;
    if (item.contains("value") && item["value"].is_string()) {
      value = item["value"];
    } else if (item.contains("value") && !item["value"].is_null()) {
      return ComputeInvalid("Invalid value for field '" + at + ".value': must be a string.");
    }
    if (value.size() > kMaxMetadataValueBytes) {
      return ComputeInvalid("Invalid value for field '" + at +
                            ".value': value is too large (" + std::to_string(value.size()) +
                            " bytes); the limit is " + std::to_string(kMaxMetadataValueBytes) +
                            " bytes.");
    }
    for (const auto& [k, v] : items) {
      if (k == key) {
        return ComputeInvalid("Invalid value for field '" + at + ".key': '" + key +
                              "'. Duplicate keys are not allowed.");
      }
    }
    total += key.size() + value.size();
    items.emplace_back(std::move(key), std::move(value));
  }
  if (total > kMaxMetadataTotalBytes) {
    return ComputeInvalid("Invalid value for field 'resource.items': metadata is too large (" +
                          std::to_string(total) + " bytes); the limit is " +
                          std::to_string(kMaxMetadataTotalBytes) + " bytes.");
  }
  return items;
}

}  // namespace

ApiServerImpl::ComputeProject& ApiServerImpl::ComputeProjectLocked(const Call& c) {
  auto [it, added] = compute_projects_.try_emplace(c.project);
  if (added) {
    it->second.fingerprint = MetadataFingerprint({});
    it->second.created = c.wall;
  }
  return it->second;
}

HttpResponse ApiServerImpl::GetComputeProject(const Call& c, const std::string&) {
  const ComputeProject& p = ComputeProjectLocked(c);
  std::string number = ProjectNumber(c.project);
  Json metadata{{"kind", "compute#metadata"}, {"fingerprint", p.fingerprint}};
  if (!p.items.empty()) {
    Json items = Json::array();
    for (const auto& [k, v] : p.items) {
      items.push_back({{"key", k}, {"value", v}});
    }
    metadata["items"] = std::move(items);
  }
  Json quotas = Json::array();
  // A few of the project's global quotas, none of them used by the emulator's nodes.
  for (const auto& [metric, limit] : std::vector<std::pair<const char*, int>>{
           {"SNAPSHOTS", 5000}, {"NETWORKS", 15}, {"FIREWALLS", 200}, {"IMAGES", 2000}}) {
    quotas.push_back({{"metric", metric}, {"limit", limit}, {"usage", 0}});
  }
  return JsonResponse(Json{{"kind", "compute#project"},
                           {"id", number},
                           {"creationTimestamp", ComputeTimestamp(p.created)},
                           {"name", c.project},
                           {"commonInstanceMetadata", metadata},
                           {"quotas", quotas},
                           {"selfLink", ComputeRoot(*c.req) + "projects/" + c.project},
                           {"defaultServiceAccount",
                            number + "-compute@developer.gserviceaccount.com"},
                           {"xpnProjectStatus", "UNSPECIFIED_XPN_PROJECT_STATUS"},
                           {"defaultNetworkTier", "PREMIUM"},
                           {"vmDnsSetting", "ZONAL_ONLY"}});
}

HttpResponse ApiServerImpl::SetCommonInstanceMetadata(const Call& c, const std::string&) {
  EMULATOR_ASSIGN_OR_RESPOND(Json body, ParseComputeBody(c));
  EMULATOR_ASSIGN_OR_RESPOND(auto items, ParseMetadataItems(body));
  ComputeProject& p = ComputeProjectLocked(c);
  // Without a fingerprint the call cannot show it read the current metadata: refused
  // like a stale one.
  if (!body.contains("fingerprint") || !body["fingerprint"].is_string() ||
      body["fingerprint"] != p.fingerprint) {
    return ErrorResponse(ComputeError{
        412, "conditionNotMet", "Supplied fingerprint does not match current metadata fingerprint.",
        "CONDITION_NOT_MET"});
  }
  p.items = std::move(items);
  p.fingerprint = MetadataFingerprint(p.items);
  std::map<std::string, std::string> metadata(p.items.begin(), p.items.end());
  ComputeOperation& op =
      StartComputeOperationLocked(c, "", "compute.projects.setCommonInstanceMetadata",
                                  "projects/" + c.project, ProjectNumber(c.project));
  Json answer = ComputeOperations::Render(op, ComputeRoot(*c.req));
  // Calls for one project run in the order they were made, so the last set wins.
  work_.Post("projects/" + c.project, [this, project = c.project, path = op.Path(),
                                       metadata = std::move(metadata)] {
    Status s = hosts_->SetProjectMetadata(project, metadata);
    std::lock_guard<std::mutex> l(mu_);
    if (s.ok()) {
      compute_ops_.Finish(path, clock_.Now());
    } else {
      Log(LogLevel::kWarn, "emulator: project metadata of " + project + ": " + s.ToString());
      compute_ops_.Fail(path, {500, "backendError", s.message(), "INTERNAL_ERROR"}, clock_.Now());
    }
  });
  return JsonResponse(answer);
}

}  // namespace tpufleet::emulator
