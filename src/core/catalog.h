// The accelerator catalog: what a Cloud TPU type name means (chips, TensorCores,
// worker VMs, topology), what each family's hosts have, which runtime versions and
// zones go with it, and what it costs.
//
// The facts live in a YAML data file (data/catalog.yaml), compiled into the binary as
// the built-in catalog and extendable without recompiling: a user's file is laid over
// the built-in one by ParseCatalog (see there). core does no I/O: callers hand it text.
//
// Type names follow the API: v2/v3/v4/v5p/tpu7x-N count TensorCores (2 per chip), so
// chips = N/2 and workers = N/8; v5litepod-N and v6e-N count chips, one worker VM up
// to 8 chips and 4 chips per worker beyond. Aliases (v5e-N for v5litepod-N) resolve to
// the API name.
//
// Devices are what a framework (JAX, PyTorch/XLA) sees: each TensorCore of a v2, v3 or
// TPU7x chip is a device of its own with its share of the chip's HBM, while v4 and v5p
// join their two TensorCores into one device (megacore). A model replica that does
// not shard needs one device with room for it, not one chip.
//
// A zone that once served a family and no longer does (older guides and TPU Research
// Cloud emails still name us-central1-f for v2-8 and v3-8) is kept as a RetiredZone, so
// ZoneNotOffered can say so and name where the family is offered now.
//
// Thread-safety: a Catalog is an immutable value once built; share it freely.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace tpufleet {

/// What the number after the family name counts.
enum class SuffixUnit { kTensorCores, kChips };

/// Which slices a host shape is used for.
enum class SliceKind { kAny, kSingleHost, kMultiHost };

/// The host VM of one worker.
struct HostShape {
  int chips_per_worker = 0;  // the shape serves workers with this many chips
  SliceKind slices = SliceKind::kAny;
  std::string machine_type;  // GCE machine type, e.g. "ct4p-hightpu-4t"
  int vcpus = 0;
  double ram_gib = 0;        // host RAM per worker VM
};

/// On-demand and spot list prices per chip-hour in one region.
struct RegionPrice {
  std::string region;              // "us-central2"
  double on_demand = 0;            // USD per chip-hour
  std::optional<double> spot;      // USD per chip-hour, when published
  std::string source;              // where the figure comes from, and its date
};

/// A zone that served a family once and no longer does.
struct RetiredZone {
  std::string zone;    // "us-central1-f"
  std::string family;  // "v3"
  std::string source;  // where it was listed, and where it no longer is
};

struct Family {
  std::string name;                   // API prefix: "v4", "v5litepod"
  std::vector<std::string> aliases;   // other prefixes users write: "v5e"
  std::string api_type;               // AcceleratorConfig.Type: "V4", "V5LITE_POD"
  std::string generation;             // marketing name: "TPU v5e"
  SuffixUnit suffix = SuffixUnit::kTensorCores;
  int cores_per_chip = 1;             // TensorCores per chip
  int devices_per_chip = 1;           // devices JAX sees per chip (2: v2, v3, tpu7x)
  int chips_per_worker = 4;           // chips per worker VM of a multi-host slice
  int max_single_host_chips = 4;      // largest slice that is one VM
  std::vector<int> sizes;             // valid suffixes, ascending
  std::map<int, std::string> topologies;  // suffix -> default topology ("2x2x4")
  double hbm_gib_per_chip = 0;
  std::vector<HostShape> hosts;       // empty when the host VM is not published
  std::vector<std::string> runtime_versions;  // the first is the default
  std::vector<std::string> zones;     // zones that offer the family, preferred first
  std::vector<RegionPrice> prices;    // the first is the reference price; may be empty
  std::string price_note;             // why `prices` is empty (say so, never invent one)
  std::string source;                 // sources for the family's facts, with dates

  /// The HBM one device has: hbm_gib_per_chip / devices_per_chip.
  double hbm_gib_per_device() const { return hbm_gib_per_chip / devices_per_chip; }
};

/// One concrete type, e.g. v4-32, resolved against its family.
struct AcceleratorType {
  std::string name;          // canonical API name: "v4-32"
  const Family* family = nullptr;
  int suffix = 0;            // the N in "v4-N"
  int chips = 0;
  int tensor_cores = 0;
  int devices = 0;           // chips x devices_per_chip: what jax.device_count() says
  int workers = 0;           // worker VMs (networkEndpoints)
  int chips_per_worker = 0;
  std::string topology;      // "" when the catalog has none for this size
  std::optional<HostShape> host;  // per worker; nullopt when unknown

  double hbm_gib_total() const;
  /// Host RAM summed over all workers; nullopt when the host shape is unknown.
  std::optional<double> host_ram_gib_total() const;
};

/// The region of a zone: "us-central2-b" -> "us-central2".
std::string RegionOfZone(std::string_view zone);

class Catalog {
 public:
  Catalog() = default;
  explicit Catalog(std::vector<Family> families, std::vector<RetiredZone> retired = {})
      : families_(std::move(families)), retired_(std::move(retired)) {}

  const std::vector<Family>& families() const { return families_; }
  const std::vector<RetiredZone>& retired_zones() const { return retired_; }

  /// The family named `name` or with that alias; nullptr when unknown.
  const Family* FindFamily(std::string_view name) const;

  /// Resolves "v4-32" (or an alias such as "v5e-8"). InvalidArgument, naming the
  /// nearest valid type names, when the name is malformed or the size does not exist.
  Result<AcceleratorType> Lookup(std::string_view type_name) const;

  /// Every valid type name, family by family, sizes ascending.
  std::vector<std::string> AllTypeNames() const;
  /// Every zone that offers some family, without repeats.
  std::vector<std::string> AllZones() const;

  /// The retired entry for `zone` and `family`; nullptr when there is none.
  const RetiredZone* FindRetired(std::string_view zone, const Family& family) const;

  /// Empty when `zone` offers `family`; else one sentence for a person: that the zone no
  /// longer offers it (a retired pair), does not offer it, or is unknown, with the
  /// nearest spelling and the zones that offer the family now:
  ///   zone us-central1-f no longer offers v3 (older guides and TPU Research Cloud emails
  ///   still name it); v3 is offered now in us-central1-a, us-central1-b, europe-west4-a
  std::string ZoneNotOffered(const Family& family, std::string_view zone) const;
  /// Every runtime version of every family, without repeats.
  std::vector<std::string> AllRuntimeVersions() const;

  /// The price row for `zone`'s region, or the family's reference price (the first
  /// row) when zone is empty. nullptr when the family has no price for that region
  /// (or none at all: see Family::price_note).
  const RegionPrice* PriceFor(const Family& family, std::string_view zone = {}) const;

  /// The fraction saved by spot across the family's priced regions:
  /// 1 - spot/on_demand, smallest and largest. nullopt when no region has a spot price.
  std::optional<std::pair<double, double>> SpotDiscountRange(const Family& family) const;

 private:
  std::vector<Family> families_;
  std::vector<RetiredZone> retired_;
};

/// Parses one catalog document laid over `base` (empty for the built-in catalog): a
/// family that `base` has is updated by the fields the document gives, a new family
/// must give every required field (prices may be empty only with a price_note). A
/// `retired_zones` list replaces the base's. `origin` names the document in error messages (a
/// path, or "built-in catalog"); errors read "origin:line:col: field: expected …".
/// The result owns its families; AcceleratorTypes from Lookup point into it.
Result<Catalog> ParseCatalog(std::string_view yaml_text, std::string_view origin,
                             const Catalog& base = Catalog());

/// The text of data/catalog.yaml as built into this binary.
std::string_view BuiltinCatalogYaml();

}  // namespace tpufleet
