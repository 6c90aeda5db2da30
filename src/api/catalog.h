// The wire types of the --json output of the commands that answer from the catalog and
// a spec alone (`catalog`, `catalog TYPE`, `estimate`, `validate`, `plan`), and their JSON.
//
// Plain values, as in api/fleet.h: the CLI fills them from core's catalog, costs and
// spec; each struct's comment names its JSON object, keys in alphabetical order. A
// field that is std::optional is written as null when empty unless its comment says
// "written only when set". ToJson never throws (bad UTF-8 becomes U+FFFD).
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tpufleet::api {

/// What `catalog` says of a family, and repeats for each of its types: {"family",
/// "generation", "api_type", "suffix_counts", "hbm_gib_per_chip", "runtime_versions",
/// "zones", "source", "price_per_chip_hour", "price_region", "spot_discount_min",
/// "spot_discount_max"}.
struct FamilyFacts {
  std::string family;         // "v4"
  std::string generation;     // "TPU v4"
  std::string api_type;       // "V4"
  std::string suffix_counts;  // what the N of FAMILY-N counts: "chips" or "tensor_cores"
  double hbm_gib_per_chip = 0;
  int devices_per_chip = 1;       // the devices a framework (JAX) sees on one chip
  double hbm_gib_per_device = 0;
  std::vector<std::string> runtime_versions;  // the first is the default
  std::vector<std::string> zones;
  std::string source;
  std::optional<double> price_per_chip_hour;  // on demand, in price_region
  std::optional<std::string> price_note;      // why there is no price, when there is none
  std::optional<std::string> price_region;
  std::optional<double> spot_discount_min;    // fractions: 0.6 is 60 % off
  std::optional<double> spot_discount_max;
};

/// One family in `catalog`: FamilyFacts' keys and {"sizes", "types"}.
struct CatalogFamily {
  FamilyFacts facts;
  std::vector<int> sizes;          // the valid N
  std::vector<std::string> types;  // "v4-8", …
};

/// The on-demand price of a type and its spot range: {"usd_per_hour",
/// "spot_usd_per_hour_min", "spot_usd_per_hour_max"}.
struct TypePrice {
  double usd_per_hour = 0;
  std::optional<double> spot_usd_per_hour_min;
  std::optional<double> spot_usd_per_hour_max;
};

/// `catalog TYPE`: FamilyFacts' keys and {"type", "chips", "workers",
/// "chips_per_worker", "tensor_cores", "topology", "hbm_gib_total",
/// "host_machine_type", "host_vcpus_per_worker", "host_ram_gib_per_worker",
/// "host_ram_gib_total", "default_runtime_version"}, and TypePrice's keys when the
/// catalog prices the family.
struct CatalogType {
  FamilyFacts facts;
  std::string type;  // "v4-32"
  int chips = 0;
  int workers = 0;
  int chips_per_worker = 0;
  int tensor_cores = 0;
  int devices = 0;   // what a framework sees: chips x devices_per_chip
  std::optional<std::string> topology;
  double hbm_gib_total = 0;
  std::optional<std::string> host_machine_type;  // the host VM, when published
  std::optional<int> host_vcpus_per_worker;
  std::optional<double> host_ram_gib_per_worker;
  std::optional<double> host_ram_gib_total;
  std::string default_runtime_version;
  std::optional<TypePrice> price;  // its keys written only when set
};

/// `estimate`: {"type", "count", "hours", "chips", "region", "price_per_chip_hour",
/// "usd_per_hour", "on_demand_usd", "spot_min_usd"?, "spot_max_usd"?}.
struct Estimate {
  std::string type;
  int count = 1;    // slices
  double hours = 0;
  int chips = 0;    // of all the slices
  std::string region;
  double price_per_chip_hour = 0;
  double usd_per_hour = 0;
  double on_demand_usd = 0;
  std::optional<double> spot_min_usd;  // --spot: written only when set
  std::optional<double> spot_max_usd;  // --spot: written only when set
};

/// One node entry of `validate`: {"name", "names", "type", "count", "chips",
/// "workers", "capacity", "queued", "queued_valid_until_seconds", "zones",
/// "runtime_version", "usd_per_hour", "price_region", "hosts"?}.
struct ValidatedNode {
  std::string name;
  std::vector<std::string> names;  // the node ids up creates
  std::optional<std::string> type;  // null for ssh-hosts, as are chips, capacity, runtime
  int count = 1;
  std::optional<int> chips;
  int workers = 1;
  std::optional<std::string> capacity;
  bool queued = false;
  std::optional<int64_t> queued_valid_until_seconds;
  std::vector<std::string> zones;
  std::optional<std::string> runtime_version;
  std::optional<double> usd_per_hour;
  std::optional<std::string> price_region;
  std::optional<std::vector<std::string>> hosts;  // ssh-hosts: written only when set
  std::optional<int64_t> ttl_seconds;              // deleted this long after its create
  /// {"after_seconds", "action"}: reclaimed once idle that long ("delete" or "stop").
  struct Idle {
    int64_t after_seconds = 0;
    std::string action;
  };
  std::optional<Idle> idle;
  /// {"after", "within_seconds"}: a spot node lost `after` times within that window is
  /// made again on demand.
  struct SpotFallback {
    int after = 0;
    int64_t within_seconds = 0;
  };
  std::optional<SpotFallback> spot_fallback;
};

/// A fleet's budget: {"usd_per_day", "usd_total", "action"} ("stop-creating",
/// "delete-spot", "delete-all").
struct ValidatedBudget {
  std::optional<double> usd_per_day;
  std::optional<double> usd_total;
  std::string action;
};

/// `validate`: {"fleet", "provider", "project", "nodes", "usd_per_hour", "usd_per_day",
/// "budget", "prometheus_port", "warnings"}.
struct ValidateReport {
  std::string fleet;
  std::string provider;  // "gcp-tpu", "emulator", "ssh-hosts"
  std::optional<std::string> project;
  std::vector<ValidatedNode> nodes;
  double usd_per_hour = 0;  // on demand, every node
  double usd_per_day = 0;
  std::optional<ValidatedBudget> budget;  // null: no budget
  std::optional<int> prometheus_port;     // null: the agents serve no /metrics
  std::vector<std::string> warnings;
};

/// One fitting type: {"type", "family", "chips", "workers", "devices",
/// "devices_per_chip", "hbm_gib_per_device", "devices_per_replica",
/// "chips_per_replica", "sharded", "layout", "replicas_that_fit",
/// "host_ram_gib_per_worker", "usd_per_hour"}.
struct PlanOption {
  std::string type;    // "v5litepod-8"
  std::string family;  // "v5e"
  int chips = 0;
  int workers = 0;
  int devices = 0;           // what JAX sees on the whole slice
  int devices_per_chip = 1;
  double hbm_gib_per_device = 0;
  int devices_per_replica = 1;   // above 1 only when the replica is sharded
  double chips_per_replica = 0;  // 0.5: one TensorCore of a two-device chip
  bool sharded = false;
  std::string layout;            // "1 replica per device", …
  int replicas_that_fit = 0;
  double host_ram_gib_per_worker = 0;
  std::optional<double> usd_per_hour;  // on demand; null when the catalog has no price
};

// The documents, indented by two spaces, without a final newline. `catalog` is a list,
// and so is `plan` (empty when no type fits).
std::string ToJson(const std::vector<CatalogFamily>& families);
std::string ToJson(const CatalogType& type);
std::string ToJson(const Estimate& estimate);
std::string ToJson(const ValidateReport& report);
std::string ToJson(const std::vector<PlanOption>& options);

}  // namespace tpufleet::api
