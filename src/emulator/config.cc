#include "emulator/config.h"

#include <nlohmann/json.hpp>

#include "core/yaml_reader.h"
#include "emulator/faults.h"
#include "emulator/token.h"
#include "util/enum_names.h"
#include "util/file.h"
#include "util/strings.h"

namespace tpufleet::emulator {
namespace {

constexpr EnumName<QuotaTier> kQuotaTiers[] = {
    {QuotaTier::kAny, "any"}, {QuotaTier::kSpot, "spot"}, {QuotaTier::kOnDemand, "on_demand"}};

using yaml::Field;

Timings RealisticTimingsImpl() {
  using std::chrono::seconds;
  return {.create = seconds(120), .start = seconds(90), .stop = seconds(60),
          .remove = seconds(60), .update = seconds(10), .stockout_fail = seconds(30),
          .qr_accept = seconds(5), .qr_wait = seconds(60), .qr_delete = seconds(30),
          .preemption_notice = seconds(30), .maintenance_notice = seconds(60),
          .maintenance = seconds(120), .disk_create = seconds(5), .disk_delete = seconds(5)};
}

Status ParseMillis(const Field& f, Millis* out) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string text, f.String());
  Result<Millis> d = ParseFaultDuration(text);
  if (!d.ok()) {
    return f.Error(d.status().message());
  }
  *out = *d;
  return Status::Ok();
}

Status ParseTimings(const Field& f, Timings* t) {
  if (!f.IsMap()) {
    TPUFLEET_ASSIGN_OR_RETURN(std::string profile, f.String());
    if (profile == "fast") {
      *t = Timings();
    } else if (profile == "realistic") {
      *t = RealisticTimingsImpl();
    } else {
      return f.Error("expected fast, realistic, or a map of operation times");
    }
    return Status::Ok();
  }
  TPUFLEET_TRY(f.CheckKeys({"profile", "create", "start", "stop", "delete", "update",
                            "stockout_fail", "qr_accept", "qr_wait", "qr_delete",
                            "preemption_notice", "maintenance_notice", "maintenance", "disk_create",
                            "disk_delete"}));
  if (auto p = f.Get("profile")) {
    TPUFLEET_TRY(ParseTimings(*p, t));
  }
  const std::pair<const char*, Millis*> fields[] = {
      {"create", &t->create},
      {"start", &t->start},
      {"stop", &t->stop},
      {"delete", &t->remove},
      {"update", &t->update},
      {"stockout_fail", &t->stockout_fail},
      {"qr_accept", &t->qr_accept},
      {"qr_wait", &t->qr_wait},
      {"qr_delete", &t->qr_delete},
      {"preemption_notice", &t->preemption_notice},
      {"maintenance_notice", &t->maintenance_notice},
      {"maintenance", &t->maintenance},
      {"disk_create", &t->disk_create},
      {"disk_delete", &t->disk_delete}};
  for (const auto& [key, out] : fields) {
    if (auto v = f.Get(key)) {
      TPUFLEET_TRY(ParseMillis(*v, out));
    }
  }
  return Status::Ok();
}

Status CheckFamily(const Field& f, const Catalog& catalog, std::string* family) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string name, f.String());
  const Family* fam = catalog.FindFamily(name);
  if (fam == nullptr) {
    std::vector<std::string> names;
    for (const Family& x : catalog.families()) {
      names.push_back(x.name);
    }
    return f.Error("unknown family \"" + name + "\"" + DidYouMean(name, names));
  }
  *family = fam->name;
  return Status::Ok();
}

Status ParseChips(const Field& f, long long* chips) {
  TPUFLEET_ASSIGN_OR_RETURN(*chips, f.Int());
  if (*chips < 0) {
    return f.Error("expected a number of chips, 0 or more");
  }
  return Status::Ok();
}

// What a capacity and a quota entry both have: where (`place_key`: "zone" or
// "region"), a family of the catalog and a number of chips, all required.
Status ParseLimit(const Field& item, const Catalog& catalog, std::string_view place_key,
                  std::string* place, std::string* family, long long* chips) {
  TPUFLEET_ASSIGN_OR_RETURN(Field where, item.Require(place_key));
  TPUFLEET_ASSIGN_OR_RETURN(*place, where.String());
  TPUFLEET_ASSIGN_OR_RETURN(Field fam, item.Require("family"));
  TPUFLEET_TRY(CheckFamily(fam, catalog, family));
  TPUFLEET_ASSIGN_OR_RETURN(Field count, item.Require("chips"));
  return ParseChips(count, chips);
}

}  // namespace

Timings RealisticTimings() {
  return RealisticTimingsImpl();
}

Result<EmulatorConfig> ParseEmulatorConfig(std::string_view yaml_text, std::string_view origin,
                                           const Catalog& catalog,
                                           std::vector<std::string>* key_files) {
  EmulatorConfig c;
  TPUFLEET_ASSIGN_OR_RETURN(Field root, yaml::ParseDocument(yaml_text, origin));
  TPUFLEET_TRY(root.CheckKeys({"timings", "seed", "projects", "default_page_size", "max_page_size",
                               "max_multislice_nodes", "capacity", "quota", "auth"}));
  if (auto t = root.Get("timings")) {
    TPUFLEET_TRY(ParseTimings(*t, &c.timings));
  }
  if (auto s = root.Get("seed")) {
    TPUFLEET_ASSIGN_OR_RETURN(long long seed, s->Int());
    c.seed = static_cast<uint64_t>(seed);
  }
  if (auto p = root.Get("projects")) {
    TPUFLEET_ASSIGN_OR_RETURN(c.projects, p->StringList());
  }
  for (const auto& [key, out] :
       {std::pair<const char*, int*>{"default_page_size", &c.default_page_size},
        std::pair<const char*, int*>{"max_page_size", &c.max_page_size}}) {
    if (auto f = root.Get(key)) {
      TPUFLEET_ASSIGN_OR_RETURN(long long n, f->Int());
      if (n <= 0 || n > 100000) {
        return f->Error("expected a page size between 1 and 100000");
      }
      *out = static_cast<int>(n);
    }
  }
  if (auto f = root.Get("max_multislice_nodes")) {
    TPUFLEET_ASSIGN_OR_RETURN(long long n, f->Int());
    if (n < 2 || n > kMaxMultisliceNodesLimit) {
      return f->Error("expected a node count between 2 and " +
                      std::to_string(kMaxMultisliceNodesLimit));
    }
    c.max_multislice_nodes = static_cast<int>(n);
  }
  if (auto cap = root.Get("capacity")) {
    TPUFLEET_ASSIGN_OR_RETURN(std::vector<Field> items, cap->Items());
    for (const Field& item : items) {
      TPUFLEET_TRY(item.CheckKeys({"zone", "family", "chips"}));
      CapacityLimit l;
      TPUFLEET_TRY(ParseLimit(item, catalog, "zone", &l.zone, &l.family, &l.chips));
      c.capacity.push_back(std::move(l));
    }
  }
  if (auto quota = root.Get("quota")) {
    TPUFLEET_ASSIGN_OR_RETURN(std::vector<Field> items, quota->Items());
    for (const Field& item : items) {
      TPUFLEET_TRY(item.CheckKeys({"region", "family", "tier", "chips"}));
      QuotaLimit l;
      TPUFLEET_TRY(ParseLimit(item, catalog, "region", &l.region, &l.family, &l.chips));
      if (auto tier = item.Get("tier")) {
        TPUFLEET_ASSIGN_OR_RETURN(std::string t, tier->String());
        std::optional<QuotaTier> known = ValueIn(kQuotaTiers, t);
        if (!known) {
          return tier->Error("expected any, spot or on_demand");
        }
        l.tier = *known;
      }
      c.quota.push_back(std::move(l));
    }
  }
  if (auto auth = root.Get("auth")) {
    TPUFLEET_TRY(
        auth->CheckKeys({"service_account_keys", "authorized_users", "require_issued_tokens"}));
    if (auto keys = auth->Get("service_account_keys")) {
      TPUFLEET_ASSIGN_OR_RETURN(std::vector<std::string> files, keys->StringList());
      if (key_files != nullptr) {
        key_files->insert(key_files->end(), files.begin(), files.end());
      }
    }
    if (auto users = auth->Get("authorized_users")) {
      TPUFLEET_ASSIGN_OR_RETURN(std::vector<Field> items, users->Items());
      for (const Field& item : items) {
        TPUFLEET_TRY(item.CheckKeys({"client_id", "client_secret", "refresh_token"}));
        AuthorizedUser u;
        for (const auto& [key, out] :
             {std::pair<const char*, std::string*>{"client_id", &u.client_id},
              std::pair<const char*, std::string*>{"client_secret", &u.client_secret},
              std::pair<const char*, std::string*>{"refresh_token", &u.refresh_token}}) {
          TPUFLEET_ASSIGN_OR_RETURN(Field f, item.Require(key));
          TPUFLEET_ASSIGN_OR_RETURN(*out, f.String());
        }
        c.auth.authorized_users.push_back(std::move(u));
      }
    }
    if (auto req = auth->Get("require_issued_tokens")) {
      TPUFLEET_ASSIGN_OR_RETURN(c.auth.require_issued_tokens, req->Bool());
    }
  }
  return c;
}

Result<ServiceAccountKey> ParseServiceAccountKey(std::string_view text, std::string_view origin) {
  std::string_view trimmed = Trim(text);
  if (StartsWith(trimmed, "-----BEGIN PUBLIC KEY-----")) {
    ServiceAccountKey k;
    k.public_key_pem = std::string(trimmed) + "\n";
    return k;
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgumentError(std::string(origin) +
                                ": expected a service-account key JSON file or a PEM public key");
  }
  if (!j.contains("private_key") || !j["private_key"].is_string()) {
    return InvalidArgumentError(std::string(origin) + ": the key file has no private_key");
  }
  Result<std::string> pub = PublicKeyOfPrivateKey(j["private_key"].get<std::string>());
  if (!pub.ok()) {
    return pub.status().WithContext(std::string(origin) + ": private_key");
  }
  ServiceAccountKey k;
  k.public_key_pem = *pub;
  k.client_email = j.value("client_email", std::string());
  k.key_id = j.value("private_key_id", std::string());
  return k;
}

Result<EmulatorConfig> LoadEmulatorConfig(const std::string& path, const Catalog& catalog) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  std::vector<std::string> key_files;
  TPUFLEET_ASSIGN_OR_RETURN(EmulatorConfig c, ParseEmulatorConfig(text, path, catalog, &key_files));
  std::string dir;
  if (size_t slash = path.rfind('/'); slash != std::string::npos) {
    dir = path.substr(0, slash + 1);
  }
  for (const std::string& f : key_files) {
    std::string full = (!f.empty() && f[0] == '/') ? f : dir + f;
    TPUFLEET_ASSIGN_OR_RETURN(std::string key_text, ReadFile(full));
    TPUFLEET_ASSIGN_OR_RETURN(ServiceAccountKey key, ParseServiceAccountKey(key_text, full));
    c.auth.service_account_keys.push_back(std::move(key));
  }
  return c;
}

std::string_view QuotaTierName(QuotaTier tier) {
  return NameIn(kQuotaTiers, tier);
}

}  // namespace tpufleet::emulator
