// Cost arithmetic and the hardware planner: pure functions over the Catalog.
//
// Estimates use the list price per chip-hour of the zone's region (or the family's
// reference region) times chips, hours and count. Spot is given as a range, because
// spot prices vary by region and move: the family's smallest and largest spot discount
// (Catalog::SpotDiscountRange) applied to the on-demand figure.
//
// The planner answers "which slices fit a model that needs X GiB of accelerator memory
// per replica and Y GiB of host RAM on each worker, N replicas at once?". A replica
// uses ceil(X / HBM per chip) chips of one slice; a type fits when it has chips for all
// N replicas and its worker VMs have at least Y GiB of RAM.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/catalog.h"

namespace tpufleet {

struct CostEstimate {
  double usd_per_hour = 0;   // on demand, all `count` VMs
  double on_demand_usd = 0;  // usd_per_hour x hours
  std::optional<double> spot_min_usd;  // with the largest spot discount
  std::optional<double> spot_max_usd;  // with the smallest spot discount
  const RegionPrice* price = nullptr;  // the price row used
};

/// The cost of `count` slices of `type` for `hours` in `zone` (empty: reference
/// region). NotFound when the catalog has no price for the zone's region.
/// REQUIRES: hours >= 0, count >= 1.
Result<CostEstimate> EstimateCost(const Catalog& catalog, const AcceleratorType& type,
                                  double hours, int count, std::string_view zone = {});

/// What one node costs at list price. Spot prices vary by region and move, so a spot
/// node is priced at the top of its family's spot range: the most it can cost.
struct NodePrice {
  double usd = 0;
  bool upper_bound = false;  // spot: at most this
};

/// The list price of one node of `type_name` in `zone` for `hours`, on demand or spot:
/// what `up` shows per hour and `status` so far, both from here. nullopt when there is
/// no type (ssh-hosts) or the catalog has no such type or no price for the zone's region.
/// REQUIRES: hours >= 0.
std::optional<NodePrice> PriceNode(const Catalog& catalog, std::string_view type_name,
                                   std::string_view zone, bool spot, double hours);

struct PlanRequest {
  double hbm_gib_per_replica = 0;      // accelerator memory one replica needs
  double host_ram_gib_per_worker = 0;  // host RAM each worker VM needs
  int replicas = 1;                    // replicas that run at once
  std::optional<double> max_usd_per_hour;  // on-demand ceiling, if any
};

struct PlanOption {
  AcceleratorType type;
  int chips_per_replica = 0;
  int replicas_that_fit = 0;  // how many replicas the slice could hold
  double usd_per_hour = 0;    // on demand, reference region
};

/// Why no type of a family fits.
struct PlanRejection {
  std::string family;
  std::string reason;  // "HBM", "host RAM", or "price"
  std::string detail;  // a sentence a person can act on
};

struct Plan {
  std::vector<PlanOption> options;       // every fitting type, cheapest per hour first
  std::vector<PlanRejection> rejected;   // one per family with no fitting type
};

/// REQUIRES: request.hbm_gib_per_replica > 0, host_ram_gib_per_worker >= 0, replicas >= 1.
Plan PlanHardware(const Catalog& catalog, const PlanRequest& request);

}  // namespace tpufleet
