// catalog, estimate and plan: answers from the accelerator catalog, no network.
#include <cmath>
#include <nlohmann/json.hpp>
#include <ostream>

#include "api/catalog.h"
#include "cli/command.h"
#include "cli/json_reports.h"
#include "cli/table.h"
#include "core/cost.h"
#include "util/strings.h"

namespace tpufleet::cli {
namespace {

using nlohmann::json;

// Bounds on the numeric flags: beyond them an answer means nothing, and every figure
// computed from a bounded flag stays finite (`--hours 1e308` printed "$inf").
/// A century of hours: a longer estimate is a typo.
constexpr double kMaxHours = 100 * 24 * 365;
/// 10 PiB of accelerator memory: six times what the largest slice (tpu7x-16384) has.
constexpr double kMaxHbmGib = 10 * 1024 * 1024;
/// 64 TiB of host RAM per worker: more than any VM has.
constexpr double kMaxHostRamGib = 64 * 1024;
/// Replicas at once: more than all the devices of every listed slice together.
constexpr double kMaxReplicas = 1e6;
/// A ceiling of a billion dollars an hour is no ceiling at all.
constexpr double kMaxUsdPerHour = 1e9;

// "$14.74/h (71% off)" or "$104.49 to $233.28 (55% to 80% off, by region)".
std::string SpotRangeText(double on_demand, std::pair<double, double> discount) {
  if (std::round(discount.first * 100) == std::round(discount.second * 100)) {
    return FormatUsd(on_demand * (1 - discount.first)) + " (" + FormatPercent(discount.first) +
           " off)";
  }
  return FormatUsd(on_demand * (1 - discount.second)) + " to " +
         FormatUsd(on_demand * (1 - discount.first)) + " (" + FormatPercent(discount.first) +
         " to " + FormatPercent(discount.second) + " off, by region)";
}

// A list price per chip-hour: "$2.70", "$1.125", "$0.9215" (cents, or every digit given).
std::string FormatChipHour(double usd) {
  std::string exact = FormatNumber(usd, 4);
  return exact.size() - std::min(exact.find('.'), exact.size()) > 3 ? "$" + exact
                                                                     : FormatUsd(usd);
}

void PrintRejections(std::ostream& out, const Plan& plan) {
  for (const PlanRejection& r : plan.rejected) {
    out << "  " << r.family << ": " << r.reason << ": " << r.detail << "\n";
  }
}

std::string SizesText(const Family& f) {
  std::vector<std::string> sizes;
  for (int n : f.sizes) {
    sizes.push_back(std::to_string(n));
  }
  return Join(sizes, ",");
}

std::string HostRamText(const Family& f) {
  if (f.hosts.empty()) {
    return "unknown";
  }
  std::vector<std::string> parts;
  for (const HostShape& h : f.hosts) {
    std::string p = FormatNumber(h.ram_gib, 0);
    if (std::find(parts.begin(), parts.end(), p) == parts.end()) {
      parts.push_back(p);
    }
  }
  return Join(parts, "/") + " GiB";
}

void PrintType(std::ostream& out, const Catalog& catalog, const AcceleratorType& t) {
  const Family& f = *t.family;
  out << t.name << "  (" << f.generation << ", API type " << f.api_type
      << (t.topology.empty() ? "" : ", topology " + t.topology) << ")\n";
  TextTable rows({"  chips", std::to_string(t.chips) + " (" + std::to_string(t.chips_per_worker) +
                                 " per worker)"});
  rows.AddRow({"  workers", std::to_string(t.workers) + (t.workers == 1 ? " VM" : " VMs")});
  rows.AddRow({"  TensorCores", std::to_string(t.tensor_cores)});
  rows.AddRow({"  devices", std::to_string(t.devices) + " as JAX sees them (" +
                                (f.devices_per_chip == 1
                                     ? std::string("1 per chip")
                                     : std::to_string(f.devices_per_chip) + " per chip, one per TensorCore") +
                                ", " + FormatNumber(f.hbm_gib_per_device()) + " GiB each)"});
  rows.AddRow({"  HBM", FormatNumber(t.hbm_gib_total()) + " GiB (" +
                            FormatNumber(f.hbm_gib_per_chip) + " GiB per chip)"});
  if (t.host) {
    rows.AddRow({"  host", FormatNumber(t.host->ram_gib) + " GiB RAM, " +
                               std::to_string(t.host->vcpus) + " vCPUs per worker (" +
                               t.host->machine_type + "); " +
                               FormatNumber(*t.host_ram_gib_total()) + " GiB RAM in all"});
  } else {
    rows.AddRow({"  host", "not published for " + f.name});
  }
  rows.AddRow({"  runtime", f.runtime_versions.front() + " (default); also " +
                                Join(std::vector<std::string>(f.runtime_versions.begin() + 1,
                                                              f.runtime_versions.end()),
                                     ", ")});
  rows.AddRow({"  zones", Join(f.zones, ", ")});
  if (f.prices.empty()) {
    rows.AddRow({"  on demand", "no price: " + f.price_note});
  }
  if (const RegionPrice* p = catalog.PriceFor(f)) {
    double hourly = p->on_demand * t.chips;
    rows.AddRow({"  on demand", FormatUsd(hourly) + " per hour (" +
                                    std::to_string(t.chips) + " chips x " +
                                    FormatChipHour(p->on_demand) + " per chip-hour in " +
                                    p->region + ")"});
    if (auto range = catalog.SpotDiscountRange(f)) {
      rows.AddRow({"  spot", SpotRangeText(hourly, *range) + " per hour"});
    }
  }
  rows.AddRow({"  sources", f.source});
  rows.Print(out);
}

}  // namespace

ExitStatus RunCatalog(Invocation& inv) {
  if (inv.args.positional.size() > 1) {
    return UsageError(inv, "catalog takes at most one TYPE");
  }
  Result<const Catalog*> catalog = inv.LoadCatalog();
  if (!catalog.ok()) {
    return Fail(inv, catalog.status());
  }
  const Catalog& cat = **catalog;
  if (inv.args.positional.size() == 1) {
    Result<AcceleratorType> t = cat.Lookup(inv.args.positional[0]);
    if (!t.ok()) {
      return UsageError(inv, t.status().message());
    }
    if (inv.json) {
      inv.out << api::ToJson(ToApi(cat, *t)) << "\n";
    } else {
      PrintType(inv.out, cat, *t);
    }
    return ExitStatus::kOk;
  }
  if (inv.json) {
    inv.out << api::ToJson(ToApi(cat)) << "\n";
    return ExitStatus::kOk;
  }
  TextTable table({"FAMILY", "GENERATION", "SIZES", "HBM/CHIP", "DEVICES/CHIP",
                   "HOST RAM/WORKER", "$/CHIP-HOUR", "SPOT OFF", "ZONES"});
  for (const Family& f : cat.families()) {
    const RegionPrice* p = cat.PriceFor(f);
    auto range = cat.SpotDiscountRange(f);
    std::string spot = !range ? "-"
                       : std::round(range->first * 100) == std::round(range->second * 100)
                           ? FormatPercent(range->first)
                           : FormatPercent(range->first) + "-" + FormatPercent(range->second);
    table.AddRow({f.name + (f.aliases.empty() ? "" : " (" + Join(f.aliases, ",") + ")"),
                  f.generation, SizesText(f), FormatNumber(f.hbm_gib_per_chip) + " GiB",
                  std::to_string(f.devices_per_chip) + " x " +
                      FormatNumber(f.hbm_gib_per_device()) + " GiB",
                  HostRamText(f), p ? FormatChipHour(p->on_demand) : "-", spot,
                  Join(f.zones, " ")});
  }
  table.Print(inv.out);
  inv.out << "\nA type is FAMILY-SIZE, e.g. v4-32 or v5litepod-16: "
             "`tpufleet catalog TYPE` for details.\n";
  return ExitStatus::kOk;
}

ExitStatus RunEstimate(Invocation& inv) {
  if (inv.args.positional.size() != 1) {
    return UsageError(inv, "estimate needs exactly one TYPE, e.g. tpufleet estimate v4-32 --hours 24");
  }
  if (!inv.args.Has("hours")) {
    return UsageError(inv, "estimate needs --hours H");
  }
  std::optional<double> hours = NumberFlag(inv, "hours", 0, 0, kMaxHours);
  std::optional<double> count = NumberFlag(inv, "count", 1, 1);
  if (!hours || !count) {
    return ExitStatus::kUsage;
  }
  // The cap keeps chips x count inside int (6144 chips x 100000 < 2^31).
  if (*count != std::floor(*count) || *count > 100000) {
    return UsageError(inv, "--count expects a whole number up to 100000");
  }
  Result<const Catalog*> catalog = inv.LoadCatalog();
  if (!catalog.ok()) {
    return Fail(inv, catalog.status());
  }
  Result<AcceleratorType> t = (*catalog)->Lookup(inv.args.positional[0]);
  if (!t.ok()) {
    return UsageError(inv, t.status().message());
  }
  std::string zone = inv.args.Get("zone").value_or("");
  if (!zone.empty()) {
    if (std::string why = (*catalog)->ZoneNotOffered(*t->family, zone); !why.empty()) {
      return UsageError(inv, why);
    }
  }
  Result<CostEstimate> e = EstimateCost(**catalog, *t, *hours, static_cast<int>(*count), zone);
  if (!e.ok()) {
    return Fail(inv, e.status());
  }
  bool spot = inv.args.Has("spot");
  if (spot && !e->spot_min_usd) {
    return Fail(inv, NotFoundError("the catalog has no spot price for " + t->family->name));
  }
  if (inv.json) {
    api::Estimate j{t->name,
                    static_cast<int>(*count),
                    *hours,
                    t->chips * static_cast<int>(*count),
                    e->price->region,
                    e->price->on_demand,
                    e->usd_per_hour,
                    e->on_demand_usd,
                    spot ? e->spot_min_usd : std::nullopt,
                    spot ? e->spot_max_usd : std::nullopt};
    inv.out << api::ToJson(j) << "\n";
    return ExitStatus::kOk;
  }
  int n = static_cast<int>(*count);
  inv.out << n << " x " << t->name << " (" << t->chips * n << " chips) for "
          << FormatNumber(*hours) << " h in " << e->price->region << ":\n"
          << "  on demand  " << FormatUsd(e->on_demand_usd) << "  (" << FormatUsd(e->usd_per_hour)
          << "/h = " << t->chips * n << " chips x " << FormatChipHour(e->price->on_demand)
          << " per chip-hour)\n";
  if (spot) {
    inv.out << "  spot       "
            << SpotRangeText(e->on_demand_usd, *(*catalog)->SpotDiscountRange(*t->family))
            << "\n";
  }
  return ExitStatus::kOk;
}

namespace {

void PrintPlanTable(std::ostream& out, const Plan& plan) {
  TextTable table({"TYPE", "CHIPS", "DEVICES", "WORKERS", "LAYOUT", "REPLICAS FIT",
                   "HOST RAM/WORKER", "$/HOUR"});
  for (const PlanOption& o : plan.options) {
    const Family& f = *o.type.family;
    table.AddRow({o.type.name, std::to_string(o.type.chips),
                  std::to_string(o.type.devices) + " x " + FormatNumber(f.hbm_gib_per_device()) +
                      " GiB",
                  std::to_string(o.type.workers), o.Layout(), std::to_string(o.replicas_that_fit),
                  FormatNumber(o.type.host->ram_gib) + " GiB",
                  o.priced ? FormatUsd(o.usd_per_hour) : "no price"});
  }
  table.Print(out);
}

}  // namespace

ExitStatus RunPlan(Invocation& inv) {
  if (!inv.args.positional.empty()) {
    return UsageError(inv, "plan takes no arguments, only flags (see tpufleet plan --help)");
  }
  if (!inv.args.Has("hbm-gib")) {
    return UsageError(inv, "plan needs --hbm-gib X (accelerator memory one replica needs)");
  }
  std::optional<double> hbm = NumberFlag(inv, "hbm-gib", 0, 0, kMaxHbmGib);
  std::optional<double> ram = NumberFlag(inv, "host-ram-gib", 0, 0, kMaxHostRamGib);
  std::optional<double> replicas = NumberFlag(inv, "replicas", 1, 1, kMaxReplicas);
  std::optional<double> max_usd = NumberFlag(inv, "max-usd-per-hour", 0, 0, kMaxUsdPerHour);
  if (!hbm || !ram || !replicas || !max_usd) {
    return ExitStatus::kUsage;
  }
  if (*hbm <= 0) {
    return UsageError(inv, "--hbm-gib must be above zero");
  }
  if (*replicas != std::floor(*replicas)) {
    return UsageError(inv, "--replicas expects a whole number");
  }
  Result<const Catalog*> catalog = inv.LoadCatalog();
  if (!catalog.ok()) {
    return Fail(inv, catalog.status());
  }
  PlanRequest req;
  req.hbm_gib_per_replica = *hbm;
  req.host_ram_gib_per_worker = *ram;
  req.replicas = static_cast<int>(*replicas);
  req.shardable = inv.args.Has("shardable");
  req.all_sizes = inv.args.Has("all");
  if (inv.args.Has("max-usd-per-hour")) {
    req.max_usd_per_hour = *max_usd;
  }
  Plan plan = PlanHardware(**catalog, req);
  if (inv.json) {
    inv.out << api::ToJson(ToApi(plan)) << "\n";
    if (plan.options.empty()) {
      inv.err << "tpufleet: no type fits:\n";
      PrintRejections(inv.err, plan);
      return ExitStatus::kFailure;
    }
    return ExitStatus::kOk;
  }
  inv.out << "Needs " << FormatNumber(*hbm) << " GiB HBM per replica x " << req.replicas
          << (req.replicas == 1 ? " replica" : " replicas") << ", " << FormatNumber(*ram)
          << " GiB host RAM per worker";
  if (req.max_usd_per_hour) {
    inv.out << ", at most " << FormatUsd(*req.max_usd_per_hour) << "/h";
  }
  inv.out << ".\n\n";
  if (plan.options.empty()) {
    inv.out << "No type fits.\n";
  } else {
    PrintPlanTable(inv.out, plan);
  }
  std::vector<std::string> per_core;
  for (const Family& f : (*catalog)->families()) {
    if (f.devices_per_chip > 1) {
      per_core.push_back(f.name);
    }
  }
  inv.out << "\nDevices are what JAX sees: "
          << (per_core.empty() ? "one per chip.\n"
                               : "one per TensorCore on " + Join(per_core, ", ") +
                                     ", one per chip on the others.\n")
          << (req.shardable ? "A replica may be split over devices (--shardable).\n"
                            : "A replica is not split over devices; --shardable allows it.\n");
  if (plan.larger_sizes_left_out > 0) {
    inv.out << "The smallest fitting slice of each family; " << plan.larger_sizes_left_out
            << " larger " << (plan.larger_sizes_left_out == 1 ? "size fits" : "sizes fit")
            << " too (--all lists them).\n";
  }
  if (!plan.rejected.empty()) {
    inv.out << "\nFamilies that do not fit:\n";
    PrintRejections(inv.out, plan);
  }
  return plan.options.empty() ? ExitStatus::kFailure : ExitStatus::kOk;
}

}  // namespace tpufleet::cli
