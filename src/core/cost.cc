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

Plan PlanHardware(const Catalog& catalog, const PlanRequest& req) {
  Plan plan;
  for (const Family& fam : catalog.families()) {
    const RegionPrice* price = catalog.PriceFor(fam);
    // In double: a huge request must not overflow int and then seem to fit.
    double per_replica = std::max(1.0, std::ceil(req.hbm_gib_per_replica / fam.hbm_gib_per_chip));
    double chips_needed = per_replica * req.replicas;
    bool any_enough_chips = false;
    bool any_enough_ram = false;
    bool any_host_known = false;
    double best_ram = 0;
    std::optional<PlanOption> cheapest_over_budget;
    size_t before = plan.options.size();
    for (int n : fam.sizes) {
      Result<AcceleratorType> t = catalog.Lookup(fam.name + "-" + std::to_string(n));
      if (!t.ok() || t->chips < chips_needed) {
        continue;
      }
      any_enough_chips = true;
      if (!t->host) {
        continue;
      }
      any_host_known = true;
      best_ram = std::max(best_ram, t->host->ram_gib);
      if (t->host->ram_gib < req.host_ram_gib_per_worker) {
        continue;
      }
      any_enough_ram = true;
      // per_replica <= chips here, so both fit in int.
      PlanOption o{*t, static_cast<int>(per_replica), static_cast<int>(t->chips / per_replica),
                   price ? price->on_demand * t->chips : 0};
      if (req.max_usd_per_hour && o.usd_per_hour > *req.max_usd_per_hour) {
        if (!cheapest_over_budget || o.usd_per_hour < cheapest_over_budget->usd_per_hour) {
          cheapest_over_budget = o;
        }
        continue;
      }
      plan.options.push_back(std::move(o));
    }
    if (plan.options.size() > before) {
      continue;
    }
    PlanRejection r{fam.name, "", ""};
    if (!any_enough_chips) {
      int largest = fam.sizes.empty() ? 0 : fam.sizes.back();
      Result<AcceleratorType> big = catalog.Lookup(fam.name + "-" + std::to_string(largest));
      r.reason = "HBM";
      r.detail = "needs " + Chips(chips_needed) + " chips of " + Gib(fam.hbm_gib_per_chip) + " (" +
                 Chips(per_replica) + " per replica x " + std::to_string(req.replicas) +
                 "); the largest slice, " +
                 (big.ok() ? big->name + ", has " + std::to_string(big->chips) : "none") + "";
    } else if (!any_host_known) {
      r.reason = "host RAM";
      r.detail = "the catalog has no host RAM figure for " + fam.name +
                 " workers, so the fit cannot be checked";
    } else if (!any_enough_ram) {
      r.reason = "host RAM";
      r.detail = "needs " + Gib(req.host_ram_gib_per_worker) + " per worker; " + fam.name +
                 " slices with enough chips have at most " + Gib(best_ram) + " per worker";
    } else {
      r.reason = "price";
      r.detail = "the cheapest fit, " + cheapest_over_budget->type.name + ", costs " +
                 FormatUsd(cheapest_over_budget->usd_per_hour) + "/h, above the limit of " +
                 FormatUsd(*req.max_usd_per_hour) + "/h";
    }
    plan.rejected.push_back(std::move(r));
  }
  std::stable_sort(plan.options.begin(), plan.options.end(),
                   [](const PlanOption& a, const PlanOption& b) {
                     if (a.usd_per_hour != b.usd_per_hour) {
                       return a.usd_per_hour < b.usd_per_hour;
                     }
                     return a.type.chips < b.type.chips;
                   });
  return plan;
}

}  // namespace tpufleet
