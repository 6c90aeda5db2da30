#include "core/cost.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "util/strings.h"

namespace tpufleet {
namespace {

std::string Gib(double v) {
  double rounded = std::round(v * 10) / 10;
  std::string s = std::to_string(rounded);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') {
    s.pop_back();
  }
  return s + " GiB";
}

// A chip count that may be far beyond int: "62500", or "6.25e+298".
std::string Chips(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

}  // namespace

Result<CostEstimate> EstimateCost(const Catalog& catalog, const AcceleratorType& type,
                                  double hours, int count, std::string_view zone) {
  const RegionPrice* price = catalog.PriceFor(*type.family, zone);
  if (price == nullptr && type.family->prices.empty()) {
    return NotFoundError("the catalog has no price for " + type.family->name + ": " +
                         type.family->price_note);
  }
  if (price == nullptr) {
    std::vector<std::string> regions;
    for (const RegionPrice& p : type.family->prices) {
      regions.push_back(p.region);
    }
    return NotFoundError("the catalog has no " + type.family->name + " price for region " +
                         RegionOfZone(zone) + "; priced regions: " + Join(regions, ", "));
  }
  CostEstimate e;
  e.price = price;
  e.usd_per_hour = price->on_demand * type.chips * count;
  e.on_demand_usd = e.usd_per_hour * hours;
  if (auto range = catalog.SpotDiscountRange(*type.family)) {
    e.spot_min_usd = e.on_demand_usd * (1.0 - range->second);
    e.spot_max_usd = e.on_demand_usd * (1.0 - range->first);
  }
  return e;
}

std::optional<NodePrice> PriceNode(const Catalog& catalog, std::string_view type_name,
                                   std::string_view zone, bool spot, double hours) {
  if (type_name.empty()) {
    return std::nullopt;
  }
  Result<AcceleratorType> type = catalog.Lookup(type_name);
  if (!type.ok()) {
    return std::nullopt;
  }
  Result<CostEstimate> c = EstimateCost(catalog, *type, hours, 1, zone);
  if (!c.ok()) {
    return std::nullopt;
  }
  if (spot && c->spot_max_usd) {
    return NodePrice{*c->spot_max_usd, true};
  }
  return NodePrice{c->on_demand_usd, false};
}

std::string PlanOption::Layout() const {
  if (devices_per_replica <= 1) {
    return "1 replica per device";
  }
  return "1 replica on " + std::to_string(devices_per_replica) + " devices (sharded)";
}

namespace {

// "a v3 device (one TensorCore; 2 per chip) has 16 GiB".
std::string DeviceText(const Family& fam) {
  std::string what = fam.devices_per_chip == 1
                         ? "the whole chip"
                         : "one TensorCore; " + std::to_string(fam.devices_per_chip) + " per chip";
  return "a " + fam.name + " device (" + what + ") has " + Gib(fam.hbm_gib_per_device());
}

// Why no type of `fam` fits, from what the walk over its sizes saw.
struct FamilyWalk {
  double devices_per_replica = 0;
  double devices_needed = 0;
  bool any_enough_devices = false;
  bool any_host_known = false;
  bool any_enough_ram = false;
  double best_ram = 0;
  std::optional<PlanOption> cheapest_over_budget;
  std::optional<PlanOption> unpriced_under_limit;  // fits, but no price to hold to the limit
};

PlanRejection Rejection(const Catalog& catalog, const Family& fam, const PlanRequest& req,
                        const FamilyWalk& w) {
  PlanRejection r{fam.name, "", ""};
  if (!w.any_enough_devices) {
    int largest = fam.sizes.empty() ? 0 : fam.sizes.back();
    Result<AcceleratorType> big = catalog.Lookup(fam.name + "-" + std::to_string(largest));
    r.reason = "HBM";
    r.detail = "needs " + Chips(w.devices_needed) + " devices of " + Gib(fam.hbm_gib_per_device()) +
               " (" + Chips(w.devices_per_replica) + " per replica x " +
               std::to_string(req.replicas) + "); the largest slice, " +
               (big.ok() ? big->name + ", has " + std::to_string(big->devices) : "none");
  } else if (!w.any_host_known) {
    r.reason = "host RAM";
    r.detail = "the catalog has no host RAM figure for " + fam.name +
               " workers, so the fit cannot be checked";
  } else if (!w.any_enough_ram) {
    r.reason = "host RAM";
    r.detail = "needs " + Gib(req.host_ram_gib_per_worker) + " per worker; " + fam.name +
               " slices with enough devices have at most " + Gib(w.best_ram) + " per worker";
  } else if (w.cheapest_over_budget) {
    r.reason = "price";
    r.detail = "the cheapest fit, " + w.cheapest_over_budget->type.name + ", costs " +
               FormatUsd(w.cheapest_over_budget->usd_per_hour) + "/h, above the limit of " +
               FormatUsd(*req.max_usd_per_hour) + "/h";
  } else {
    r.reason = "price";
    r.detail = "the catalog has no price for " + fam.name + " (" + fam.price_note +
               "), so the limit of " + FormatUsd(*req.max_usd_per_hour) + "/h cannot be checked";
  }
  return r;
}

}  // namespace

Plan PlanHardware(const Catalog& catalog, const PlanRequest& req) {
  Plan plan;
  for (const Family& fam : catalog.families()) {
    const RegionPrice* price = catalog.PriceFor(fam);
    double per_device = fam.hbm_gib_per_device();
    if (req.hbm_gib_per_replica > per_device && !req.shardable) {
      plan.rejected.push_back(
          {fam.name, "HBM",
           "one replica needs " + Gib(req.hbm_gib_per_replica) + " and " + DeviceText(fam) +
               ", as JAX sees it; a replica is not split over devices unless the model "
               "shards (plan --shardable)"});
      continue;
    }
    FamilyWalk w;
    // In double: a huge request must not overflow int and then seem to fit.
    w.devices_per_replica = std::max(1.0, std::ceil(req.hbm_gib_per_replica / per_device));
    w.devices_needed = w.devices_per_replica * req.replicas;
    std::vector<PlanOption> fits;
    for (int n : fam.sizes) {
      Result<AcceleratorType> t = catalog.Lookup(fam.name + "-" + std::to_string(n));
      if (!t.ok() || t->devices < w.devices_needed) {
        continue;
      }
      w.any_enough_devices = true;
      if (!t->host) {
        continue;
      }
      w.any_host_known = true;
      w.best_ram = std::max(w.best_ram, t->host->ram_gib);
      if (t->host->ram_gib < req.host_ram_gib_per_worker) {
        continue;
      }
      w.any_enough_ram = true;
      // devices_per_replica <= devices here, so both fit in int.
      PlanOption o;
      o.type = *t;
      o.devices_per_replica = static_cast<int>(w.devices_per_replica);
      o.chips_per_replica = w.devices_per_replica / fam.devices_per_chip;
      o.replicas_that_fit = static_cast<int>(t->devices / w.devices_per_replica);
      o.priced = price != nullptr;
      o.usd_per_hour = price ? price->on_demand * t->chips : 0;
      if (req.max_usd_per_hour && !o.priced) {
        if (!w.unpriced_under_limit) {
          w.unpriced_under_limit = o;
        }
        continue;
      }
      if (req.max_usd_per_hour && o.usd_per_hour > *req.max_usd_per_hour) {
        if (!w.cheapest_over_budget || o.usd_per_hour < w.cheapest_over_budget->usd_per_hour) {
          w.cheapest_over_budget = o;
        }
        continue;
      }
      fits.push_back(std::move(o));
    }
    if (fits.empty()) {
      plan.rejected.push_back(Rejection(catalog, fam, req, w));
      continue;
    }
    // Sizes ascend and prices grow with chips: the first fit is the smallest and cheapest.
    size_t keep = req.all_sizes ? fits.size() : 1;
    plan.larger_sizes_left_out += static_cast<int>(fits.size() - keep);
    plan.options.insert(plan.options.end(), fits.begin(), fits.begin() + keep);
  }
  std::stable_sort(plan.options.begin(), plan.options.end(),
                   [](const PlanOption& a, const PlanOption& b) {
                     if (a.priced != b.priced) {
                       return a.priced;
                     }
                     if (a.usd_per_hour != b.usd_per_hour) {
                       return a.usd_per_hour < b.usd_per_hour;
                     }
                     return a.type.chips < b.type.chips;
                   });
  return plan;
}

}  // namespace tpufleet
