// Cost arithmetic and the hardware planner: pure functions over the Catalog.
//
// Estimates use the list price per chip-hour of the zone's region (or the family's
// reference region) times chips, hours and count. Spot is given as a range, because
// spot prices vary by region and move: the family's smallest and largest spot discount
// (Catalog::SpotDiscountRange) applied to the on-demand figure.
//
// The planner answers "which slices fit a model that needs X GiB of accelerator memory
// per replica and Y GiB of host RAM on each worker, N replicas at once?" in devices, as
// the framework sees them (Family::devices_per_chip): a replica that fits one device
// takes one; one that does not is split over ceil(X / HBM per device) devices only when
// the request says the model shards, else the family does not fit. A type fits when
// its devices hold all N replicas and its worker VMs have at least Y GiB of RAM. By
// default only the smallest fitting slice of each family is offered.
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
  bool shardable = false;  // a replica may be split over several devices
  bool all_sizes = false;  // every fitting size; else the smallest per family
};

struct PlanOption {
  AcceleratorType type;
  int devices_per_replica = 0;  // 1 unless the replica is sharded
  double chips_per_replica = 0;  // devices_per_replica / devices_per_chip (0.5: one TensorCore)
  int replicas_that_fit = 0;     // how many replicas the slice's devices hold
  bool priced = true;            // false: the catalog has no price (Family::price_note)
  double usd_per_hour = 0;       // on demand, reference region; 0 when not priced

  /// How one replica is laid out: "1 replica per device", "1 replica on 2 devices (sharded)".
  std::string Layout() const;
};

/// Why no type of a family fits.
struct PlanRejection {
  std::string family;
  std::string reason;  // "HBM", "host RAM", or "price"
  std::string detail;  // a sentence a person can act on
};

struct Plan {
  /// Fitting types, cheapest per hour first, unpriced ones last; with all_sizes false
  /// only the smallest (then cheapest) of each family.
  std::vector<PlanOption> options;
  std::vector<PlanRejection> rejected;   // one per family with no fitting type
  int larger_sizes_left_out = 0;         // fitting sizes not listed (all_sizes false)
};

/// REQUIRES: request.hbm_gib_per_replica > 0, host_ram_gib_per_worker >= 0, replicas >= 1.
Plan PlanHardware(const Catalog& catalog, const PlanRequest& request);

}  // namespace tpufleet
