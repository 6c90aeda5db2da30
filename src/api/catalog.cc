#include "api/catalog.h"

#include "api/json_internal.h"

namespace tpufleet::api {
namespace {

using internal::ArrayOf;
using internal::Dump;
using internal::kDocumentIndent;
using internal::OrNull;
using nlohmann::json;

json FactsJson(const FamilyFacts& f) {
  return {{"family", f.family},
          {"generation", f.generation},
          {"api_type", f.api_type},
          {"suffix_counts", f.suffix_counts},
          {"hbm_gib_per_chip", f.hbm_gib_per_chip},
          {"devices_per_chip", f.devices_per_chip},
          {"hbm_gib_per_device", f.hbm_gib_per_device},
          {"runtime_versions", f.runtime_versions},
          {"zones", f.zones},
          {"source", f.source},
          {"price_per_chip_hour", OrNull(f.price_per_chip_hour)},
          {"price_note", OrNull(f.price_note)},
          {"price_region", OrNull(f.price_region)},
          {"spot_discount_min", OrNull(f.spot_discount_min)},
          {"spot_discount_max", OrNull(f.spot_discount_max)}};
}

json NodeJson(const ValidatedNode& n) {
  json j = {{"name", n.name},
            {"names", n.names},
            {"type", OrNull(n.type)},
            {"count", n.count},
            {"chips", OrNull(n.chips)},
            {"workers", n.workers},
            {"capacity", OrNull(n.capacity)},
            {"queued", n.queued},
            {"queued_valid_until_seconds", OrNull(n.queued_valid_until_seconds)},
            {"zones", n.zones},
            {"runtime_version", OrNull(n.runtime_version)},
            {"usd_per_hour", OrNull(n.usd_per_hour)},
            {"price_region", OrNull(n.price_region)}};
  if (n.hosts) {
    j["hosts"] = *n.hosts;
  }
  j["ttl_seconds"] = OrNull(n.ttl_seconds);
  j["idle"] = n.idle ? json{{"after_seconds", n.idle->after_seconds}, {"action", n.idle->action}}
                     : json(nullptr);
  j["spot_fallback"] = n.spot_fallback ? json{{"after", n.spot_fallback->after},
                                              {"within_seconds", n.spot_fallback->within_seconds}}
                                       : json(nullptr);
  return j;
}

json OptionJson(const PlanOption& o) {
  return {{"type", o.type},
          {"family", o.family},
          {"chips", o.chips},
          {"workers", o.workers},
          {"devices", o.devices},
          {"devices_per_chip", o.devices_per_chip},
          {"hbm_gib_per_device", o.hbm_gib_per_device},
          {"devices_per_replica", o.devices_per_replica},
          {"chips_per_replica", o.chips_per_replica},
          {"sharded", o.sharded},
          {"layout", o.layout},
          {"replicas_that_fit", o.replicas_that_fit},
          {"host_ram_gib_per_worker", o.host_ram_gib_per_worker},
          {"usd_per_hour", OrNull(o.usd_per_hour)}};
}

}  // namespace

std::string ToJson(const std::vector<CatalogFamily>& families) {
  return Dump(ArrayOf(families,
                      [](const CatalogFamily& f) {
                        json j = FactsJson(f.facts);
                        j["sizes"] = f.sizes;
                        j["types"] = f.types;
                        return j;
                      }),
              kDocumentIndent);
}

std::string ToJson(const CatalogType& t) {
  json j = FactsJson(t.facts);
  j["type"] = t.type;
  j["chips"] = t.chips;
  j["workers"] = t.workers;
  j["chips_per_worker"] = t.chips_per_worker;
  j["tensor_cores"] = t.tensor_cores;
  j["devices"] = t.devices;
  j["topology"] = OrNull(t.topology);
  j["hbm_gib_total"] = t.hbm_gib_total;
  j["host_machine_type"] = OrNull(t.host_machine_type);
  j["host_vcpus_per_worker"] = OrNull(t.host_vcpus_per_worker);
  j["host_ram_gib_per_worker"] = OrNull(t.host_ram_gib_per_worker);
  j["host_ram_gib_total"] = OrNull(t.host_ram_gib_total);
  j["default_runtime_version"] = t.default_runtime_version;
  if (t.price) {
    j["usd_per_hour"] = t.price->usd_per_hour;
    j["spot_usd_per_hour_min"] = OrNull(t.price->spot_usd_per_hour_min);
    j["spot_usd_per_hour_max"] = OrNull(t.price->spot_usd_per_hour_max);
  }
  return Dump(j, kDocumentIndent);
}

std::string ToJson(const Estimate& e) {
  json j = {{"type", e.type},
            {"count", e.count},
            {"hours", e.hours},
            {"chips", e.chips},
            {"region", e.region},
            {"price_per_chip_hour", e.price_per_chip_hour},
            {"usd_per_hour", e.usd_per_hour},
            {"on_demand_usd", e.on_demand_usd}};
  if (e.spot_min_usd) {
    j["spot_min_usd"] = *e.spot_min_usd;
  }
  if (e.spot_max_usd) {
    j["spot_max_usd"] = *e.spot_max_usd;
  }
  return Dump(j, kDocumentIndent);
}

std::string ToJson(const ValidateReport& report) {
  return Dump({{"fleet", report.fleet},
               {"provider", report.provider},
               {"project", OrNull(report.project)},
               {"nodes", ArrayOf(report.nodes, NodeJson)},
               {"usd_per_hour", report.usd_per_hour},
               {"usd_per_day", report.usd_per_day},
               {"budget", report.budget ? json{{"usd_per_day", OrNull(report.budget->usd_per_day)},
                                               {"usd_total", OrNull(report.budget->usd_total)},
                                               {"action", report.budget->action}}
                                        : json(nullptr)},
               {"prometheus_port", OrNull(report.prometheus_port)},
               {"warnings", report.warnings}},
              kDocumentIndent);
}

std::string ToJson(const std::vector<PlanOption>& options) {
  return Dump(ArrayOf(options, OptionJson), kDocumentIndent);
}

}  // namespace tpufleet::api
