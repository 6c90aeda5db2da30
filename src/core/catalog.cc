#include "core/catalog.h"

#include <algorithm>
#include <set>
#include <utility>

#include "core/fleet_spec.h"
#include "core/yaml_reader.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

using yaml::Field;

Status ParseHosts(const Field& f, std::vector<HostShape>* hosts) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<Field> items, f.Items());
  hosts->clear();
  for (const Field& item : items) {
    TPUFLEET_TRY(item.CheckKeys({"chips_per_worker", "slices", "machine_type", "vcpus", "ram_gib"}));
    HostShape h;
    TPUFLEET_ASSIGN_OR_RETURN(Field chips, item.Require("chips_per_worker"));
    TPUFLEET_ASSIGN_OR_RETURN(long long c, chips.Int());
    h.chips_per_worker = static_cast<int>(c);
    if (auto s = item.Get("slices")) {
      TPUFLEET_ASSIGN_OR_RETURN(std::string kind, s->String());
      if (kind == "single_host") {
        h.slices = SliceKind::kSingleHost;
      } else if (kind == "multi_host") {
        h.slices = SliceKind::kMultiHost;
      } else if (kind != "any") {
        return s->Error("expected single_host, multi_host or any");
      }
    }
    TPUFLEET_ASSIGN_OR_RETURN(Field mt, item.Require("machine_type"));
    TPUFLEET_ASSIGN_OR_RETURN(h.machine_type, mt.String());
    TPUFLEET_ASSIGN_OR_RETURN(Field vcpus, item.Require("vcpus"));
    TPUFLEET_ASSIGN_OR_RETURN(long long v, vcpus.Int());
    h.vcpus = static_cast<int>(v);
    TPUFLEET_ASSIGN_OR_RETURN(Field ram, item.Require("ram_gib"));
    TPUFLEET_ASSIGN_OR_RETURN(h.ram_gib, ram.Number());
    hosts->push_back(std::move(h));
  }
  return Status::Ok();
}

Status ParsePrices(const Field& f, std::vector<RegionPrice>* prices) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<Field> items, f.Items());
  prices->clear();
  for (const Field& item : items) {
    TPUFLEET_TRY(item.CheckKeys({"region", "on_demand", "spot", "source"}));
    RegionPrice p;
    TPUFLEET_ASSIGN_OR_RETURN(Field region, item.Require("region"));
    TPUFLEET_ASSIGN_OR_RETURN(p.region, region.String());
    TPUFLEET_ASSIGN_OR_RETURN(Field od, item.Require("on_demand"));
    TPUFLEET_ASSIGN_OR_RETURN(p.on_demand, od.Number());
    if (p.on_demand <= 0) {
      return od.Error("expected a price above zero (USD per chip-hour)");
    }
    if (auto spot = item.Get("spot")) {
      TPUFLEET_ASSIGN_OR_RETURN(double s, spot->Number());
      if (s <= 0 || s > p.on_demand) {
        return spot->Error("expected a spot price above zero and at most the on-demand price");
      }
      p.spot = s;
    }
    TPUFLEET_ASSIGN_OR_RETURN(Field source, item.Require("source"));
    TPUFLEET_ASSIGN_OR_RETURN(p.source, source.String());
    prices->push_back(std::move(p));
  }
  return Status::Ok();
}

Status ParsePositiveInt(const Field& f, int* out) {
  TPUFLEET_ASSIGN_OR_RETURN(long long v, f.Int());
  if (v <= 0 || v > (1 << 20)) {
    return f.Error("expected a whole number above zero");
  }
  *out = static_cast<int>(v);
  return Status::Ok();
}

// When `f` gives `key`, reads it with `read` (Field::String, Field::StringList) into
// *out; leaves *out as it is when it does not.
template <typename T>
Status ReadIfGiven(const Field& f, std::string_view key, Result<T> (Field::*read)() const,
                   T* out) {
  if (auto v = f.Get(key)) {
    TPUFLEET_ASSIGN_OR_RETURN(*out, ((*v).*read)());
  }
  return Status::Ok();
}

// Reads the fields `f` gives into `fam`, leaving the others as they are.
Status ParseFamilyFields(const Field& f, Family* fam) {
  TPUFLEET_TRY(f.CheckKeys({"generation", "aliases", "api_type", "suffix", "cores_per_chip",
                            "devices_per_chip", "chips_per_worker", "max_single_host_chips",
                            "sizes", "topologies", "hbm_gib_per_chip", "hosts",
                            "runtime_versions", "zones", "prices", "price_note", "source"}));
  TPUFLEET_TRY(ReadIfGiven(f, "generation", &Field::String, &fam->generation));
  TPUFLEET_TRY(ReadIfGiven(f, "aliases", &Field::StringList, &fam->aliases));
  TPUFLEET_TRY(ReadIfGiven(f, "api_type", &Field::String, &fam->api_type));
  if (auto s = f.Get("suffix")) {
    TPUFLEET_ASSIGN_OR_RETURN(std::string unit, s->String());
    if (unit == "tensor_cores") {
      fam->suffix = SuffixUnit::kTensorCores;
    } else if (unit == "chips") {
      fam->suffix = SuffixUnit::kChips;
    } else {
      return s->Error("expected tensor_cores or chips (what the number in the type name counts)");
    }
  }
  for (const auto& [key, out] : {std::pair{"cores_per_chip", &fam->cores_per_chip},
                                 std::pair{"devices_per_chip", &fam->devices_per_chip},
                                 std::pair{"chips_per_worker", &fam->chips_per_worker},
                                 std::pair{"max_single_host_chips", &fam->max_single_host_chips}}) {
    if (auto c = f.Get(key)) {
      TPUFLEET_TRY(ParsePositiveInt(*c, out));
    }
  }
  if (auto s = f.Get("sizes")) {
    TPUFLEET_ASSIGN_OR_RETURN(std::vector<Field> items, s->Items());
    fam->sizes.clear();
    for (const Field& item : items) {
      int n = 0;
      TPUFLEET_TRY(ParsePositiveInt(item, &n));
      if (!fam->sizes.empty() && n <= fam->sizes.back()) {
        return item.Error("sizes must be listed in increasing order");
      }
      fam->sizes.push_back(n);
    }
  }
  if (auto t = f.Get("topologies")) {
    TPUFLEET_ASSIGN_OR_RETURN(auto entries, t->Entries());
    fam->topologies.clear();
    for (const auto& [key, value] : entries) {
      long long n = 0;
      if (!ParseInt(key, &n)) {
        return t->KeyError(key, "expected a slice size (a whole number) as the key");
      }
      TPUFLEET_ASSIGN_OR_RETURN(fam->topologies[static_cast<int>(n)], value.String());
    }
  }
  if (auto h = f.Get("hbm_gib_per_chip")) {
    TPUFLEET_ASSIGN_OR_RETURN(fam->hbm_gib_per_chip, h->Number());
    if (fam->hbm_gib_per_chip <= 0) {
      return h->Error("expected a size above zero in GiB");
    }
  }
  if (auto h = f.Get("hosts")) {
    TPUFLEET_TRY(ParseHosts(*h, &fam->hosts));
  }
  TPUFLEET_TRY(ReadIfGiven(f, "runtime_versions", &Field::StringList, &fam->runtime_versions));
  TPUFLEET_TRY(ReadIfGiven(f, "zones", &Field::StringList, &fam->zones));
  if (auto p = f.Get("prices")) {
    TPUFLEET_TRY(ParsePrices(*p, &fam->prices));
  }
  TPUFLEET_TRY(ReadIfGiven(f, "price_note", &Field::String, &fam->price_note));
  TPUFLEET_TRY(ReadIfGiven(f, "source", &Field::String, &fam->source));
  return Status::Ok();
}

// Checks that a family, after all layers, is complete and self-consistent.
Status CheckFamily(const Family& fam, const Field& where) {
  auto missing = [&](std::string_view what) {
    return where.Error("family " + fam.name + " has no " + std::string(what) +
                       "; a new family must give it");
  };
  if (fam.api_type.empty()) {
    return missing("api_type");
  }
  if (fam.sizes.empty()) {
    return missing("sizes");
  }
  if (fam.hbm_gib_per_chip <= 0) {
    return missing("hbm_gib_per_chip");
  }
  if (fam.runtime_versions.empty()) {
    return missing("runtime_versions");
  }
  if (fam.zones.empty()) {
    return missing("zones");
  }
  if (fam.prices.empty() && fam.price_note.empty()) {
    return where.Error("family " + fam.name + " has no prices; give them, or a price_note " +
                       "saying why none is published");
  }
  // A framework device is a whole TensorCore or the whole chip (megacore).
  if (fam.devices_per_chip != 1 && fam.devices_per_chip != fam.cores_per_chip) {
    return where.Error("family " + fam.name + ": devices_per_chip must be 1 (one device per " +
                       "chip) or cores_per_chip (one device per TensorCore)");
  }
  int per_name = fam.suffix == SuffixUnit::kTensorCores ? fam.cores_per_chip : 1;
  for (int n : fam.sizes) {
    int chips = n / per_name;
    bool whole = n % per_name == 0 &&
                 (chips <= fam.max_single_host_chips || chips % fam.chips_per_worker == 0);
    if (!whole) {
      return where.Error("size " + std::to_string(n) + " of family " + fam.name +
                         " does not divide into whole chips and workers");
    }
  }
  for (const auto& [n, topo] : fam.topologies) {
    if (!std::binary_search(fam.sizes.begin(), fam.sizes.end(), n)) {
      return where.Error("topology given for " + fam.name + "-" + std::to_string(n) +
                         ", which is not one of its sizes");
    }
  }
  return Status::Ok();
}

Status ParseRetiredZones(const Field& f, std::vector<RetiredZone>* retired) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<Field> items, f.Items());
  retired->clear();
  for (const Field& item : items) {
    TPUFLEET_TRY(item.CheckKeys({"zone", "family", "source"}));
    RetiredZone r;
    TPUFLEET_ASSIGN_OR_RETURN(Field zone, item.Require("zone"));
    TPUFLEET_ASSIGN_OR_RETURN(r.zone, zone.String());
    TPUFLEET_ASSIGN_OR_RETURN(Field family, item.Require("family"));
    TPUFLEET_ASSIGN_OR_RETURN(r.family, family.String());
    TPUFLEET_ASSIGN_OR_RETURN(Field source, item.Require("source"));
    TPUFLEET_ASSIGN_OR_RETURN(r.source, source.String());
    retired->push_back(std::move(r));
  }
  return Status::Ok();
}

template <typename Pred>
void AppendUnique(std::vector<std::string>* out, const std::vector<std::string>& items, Pred keep) {
  for (const std::string& s : items) {
    if (keep(s) && std::find(out->begin(), out->end(), s) == out->end()) {
      out->push_back(s);
    }
  }
}

}  // namespace

double AcceleratorType::hbm_gib_total() const { return chips * family->hbm_gib_per_chip; }

std::optional<double> AcceleratorType::host_ram_gib_total() const {
  if (!host) {
    return std::nullopt;
  }
  return host->ram_gib * workers;
}

std::string RegionOfZone(std::string_view zone) {
  size_t dash = zone.rfind('-');
  if (dash == std::string_view::npos) {
    return std::string(zone);
  }
  return std::string(zone.substr(0, dash));
}

const Family* Catalog::FindFamily(std::string_view name) const {
  for (const Family& f : families_) {
    if (f.name == name ||
        std::find(f.aliases.begin(), f.aliases.end(), name) != f.aliases.end()) {
      return &f;
    }
  }
  return nullptr;
}

std::vector<std::string> Catalog::AllTypeNames() const {
  std::vector<std::string> out;
  for (const Family& f : families_) {
    for (int n : f.sizes) {
      out.push_back(f.name + "-" + std::to_string(n));
    }
  }
  return out;
}

std::vector<std::string> Catalog::AllZones() const {
  std::vector<std::string> out;
  for (const Family& f : families_) {
    AppendUnique(&out, f.zones, [](const std::string&) { return true; });
  }
  return out;
}

std::vector<std::string> Catalog::AllRuntimeVersions() const {
  std::vector<std::string> out;
  for (const Family& f : families_) {
    AppendUnique(&out, f.runtime_versions, [](const std::string&) { return true; });
  }
  return out;
}

Result<AcceleratorType> Catalog::Lookup(std::string_view type_name) const {
  std::string name(Trim(type_name));
  size_t dash = name.rfind('-');
  long long n = 0;
  const Family* fam = nullptr;
  if (dash != std::string::npos) {
    fam = FindFamily(name.substr(0, dash));
  }
  if (fam == nullptr || !ParseInt(std::string_view(name).substr(dash + 1), &n)) {
    std::vector<std::string> prefixes;
    for (const Family& f : families_) {
      prefixes.push_back(f.name + "-N");
    }
    return InvalidArgumentError("unknown accelerator type \"" + name + "\"" +
                                DidYouMean(name, AllTypeNames()) + "; types are named " +
                                Join(prefixes, ", ") + " (see `tpufleet catalog`)");
  }
  if (!std::binary_search(fam->sizes.begin(), fam->sizes.end(), n)) {
    std::vector<std::string> sizes;
    std::vector<std::string> names;
    for (int s : fam->sizes) {
      sizes.push_back(std::to_string(s));
      names.push_back(fam->name + "-" + std::to_string(s));
    }
    // Suggest by number too: v4-48 is far from every name by spelling but near v4-32/v4-64.
    auto upper = std::upper_bound(fam->sizes.begin(), fam->sizes.end(), n);
    std::vector<std::string> near;
    if (upper != fam->sizes.begin()) {
      near.push_back(fam->name + "-" + std::to_string(*(upper - 1)));
    }
    if (upper != fam->sizes.end()) {
      near.push_back(fam->name + "-" + std::to_string(*upper));
    }
    std::string unit = fam->suffix == SuffixUnit::kTensorCores ? "TensorCores" : "chips";
    return InvalidArgumentError("\"" + name + "\" is not a " + fam->name + " slice size" +
                                " (nearest: " + Join(near, ", ") + "); the number counts " +
                                unit + " and must be one of " + Join(sizes, ", "));
  }
  AcceleratorType t;
  t.family = fam;
  t.suffix = static_cast<int>(n);
  t.name = fam->name + "-" + std::to_string(n);
  t.chips = fam->suffix == SuffixUnit::kTensorCores ? t.suffix / fam->cores_per_chip : t.suffix;
  t.tensor_cores = t.chips * fam->cores_per_chip;
  t.devices = t.chips * fam->devices_per_chip;
  if (t.chips <= fam->max_single_host_chips) {
    t.workers = 1;
    t.chips_per_worker = t.chips;
  } else {
    t.workers = t.chips / fam->chips_per_worker;
    t.chips_per_worker = fam->chips_per_worker;
  }
  if (auto it = fam->topologies.find(t.suffix); it != fam->topologies.end()) {
    t.topology = it->second;
  }
  SliceKind kind = t.workers == 1 ? SliceKind::kSingleHost : SliceKind::kMultiHost;
  for (const HostShape& h : fam->hosts) {
    if (h.chips_per_worker != t.chips_per_worker) {
      continue;
    }
    if (h.slices == kind) {
      t.host = h;
      break;
    }
    if (h.slices == SliceKind::kAny && !t.host) {
      t.host = h;
    }
  }
  return t;
}

const RetiredZone* Catalog::FindRetired(std::string_view zone, const Family& family) const {
  for (const RetiredZone& r : retired_) {
    if (r.zone == zone && (r.family == family.name ||
                           std::find(family.aliases.begin(), family.aliases.end(), r.family) !=
                               family.aliases.end())) {
      return &r;
    }
  }
  return nullptr;
}

std::string Catalog::ZoneNotOffered(const Family& family, std::string_view zone) const {
  const auto& zones = family.zones;
  if (std::find(zones.begin(), zones.end(), zone) != zones.end()) {
    return "";
  }
  std::string z(zone);
  if (FindRetired(zone, family) != nullptr) {
    return "zone " + z + " no longer offers " + family.name +
           " (older guides and TPU Research Cloud emails still name it); " + family.name +
           " is offered now in " + Join(zones, ", ");
  }
  std::vector<std::string> all = AllZones();
  bool known = std::find(all.begin(), all.end(), zone) != all.end() ||
               std::any_of(retired_.begin(), retired_.end(),
                           [&](const RetiredZone& r) { return r.zone == zone; });
  return (known ? "zone " + z + " does not offer " + family.name
                : "unknown zone " + QuoteForMessage(zone)) +
         DidYouMean(z, zones) + "; " + family.name + " is offered in " + Join(zones, ", ");
}

const RegionPrice* Catalog::PriceFor(const Family& family, std::string_view zone) const {
  if (family.prices.empty()) {
    return nullptr;
  }
  if (zone.empty()) {
    return &family.prices.front();
  }
  std::string region = RegionOfZone(zone);
  for (const RegionPrice& p : family.prices) {
    if (p.region == region) {
      return &p;
    }
  }
  return nullptr;
}

std::optional<std::pair<double, double>> Catalog::SpotDiscountRange(const Family& family) const {
  std::optional<std::pair<double, double>> range;
  for (const RegionPrice& p : family.prices) {
    if (!p.spot) {
      continue;
    }
    double d = 1.0 - *p.spot / p.on_demand;
    if (!range) {
      range = {d, d};
    } else {
      range->first = std::min(range->first, d);
      range->second = std::max(range->second, d);
    }
  }
  return range;
}

Result<Catalog> ParseCatalog(std::string_view yaml_text, std::string_view origin,
                             const Catalog& base) {
  TPUFLEET_ASSIGN_OR_RETURN(Field root, yaml::ParseDocument(yaml_text, origin));
  TPUFLEET_TRY(root.CheckKeys({"families", "retired_zones"}));
  TPUFLEET_ASSIGN_OR_RETURN(Field families, root.Require("families"));
  TPUFLEET_ASSIGN_OR_RETURN(auto entries, families.Entries());
  std::vector<Family> out = base.families();
  for (const auto& [name, field] : entries) {
    // A family may be named by an alias ("v5e" for v5litepod). An init-capture: clang 14
    // cannot capture a structured binding (the fuzz build).
    auto it = std::find_if(out.begin(), out.end(), [&wanted = name](const Family& f) {
      return f.name == wanted ||
             std::find(f.aliases.begin(), f.aliases.end(), wanted) != f.aliases.end();
    });
    if (it == out.end()) {
      Family fresh;
      fresh.name = name;
      out.push_back(std::move(fresh));
      it = out.end() - 1;
    }
    TPUFLEET_TRY(ParseFamilyFields(field, &*it));
    TPUFLEET_TRY(CheckFamily(*it, field));
  }
  std::vector<RetiredZone> retired = base.retired_zones();
  if (auto r = root.Get("retired_zones")) {
    TPUFLEET_TRY(ParseRetiredZones(*r, &retired));
  }
  return Catalog(std::move(out), std::move(retired));
}

}  // namespace tpufleet
