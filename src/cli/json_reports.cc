#include "cli/json_reports.h"

namespace tpufleet::cli {
namespace {

std::vector<api::LeftoverOutcome> LeftoversTried(const std::vector<LeftoverOutcome>& tried) {
  std::vector<api::LeftoverOutcome> out;
  for (const LeftoverOutcome& o : tried) {
    out.push_back({o.leftover.name, o.leftover.zone, o.leftover.fleet, api::ErrorOf(o.status)});
  }
  return out;
}

std::vector<api::Leftover> Leftovers(const std::vector<LeftoverRecord>& leftovers) {
  std::vector<api::Leftover> out;
  for (const LeftoverRecord& x : leftovers) {
    out.push_back({x.name, x.zone, x.fleet, x.queued, x.reason, x.last_error});
  }
  return out;
}

std::vector<api::UntrackedNode> Untracked(const std::vector<UntrackedNode>& nodes) {
  std::vector<api::UntrackedNode> out;
  for (const UntrackedNode& u : nodes) {
    out.push_back({u.name, u.zone, u.fleet, u.project, u.state.Name(), u.recorded_zone});
  }
  return out;
}

api::NodeStatus NodeStatusOf(const NodeView& v) {
  const NodeRecord& r = v.record;
  api::NodeStatus n;
  n.node = r.name;
  n.fleet = r.fleet;
  n.provider = r.provider;
  n.project = r.project;
  n.zone = r.zone;
  n.type = r.type;
  n.capacity = r.capacity;
  n.state = v.state;
  n.health = r.health;
  for (const WorkerRecord& w : r.workers) {
    n.workers.push_back({w.index, w.address, w.hostname, w.setup_done});
  }
  for (const NodeDisk& d : r.data_disks) {
    n.data_disks.push_back({d.Name(), d.source, d.mode});
  }
  n.age_seconds = v.age.count();
  n.labels = r.labels;
  n.cost_usd = v.cost_usd;
  n.cost_is_upper_bound = v.cost_is_upper_bound;
  n.refresh_error = v.refresh_error;
  n.time_to_recover_seconds = v.time_to_recover_seconds;
  return n;
}

api::LeftoverStatus LeftoverStatusOf(const LeftoverView& v) {
  const LeftoverRecord& x = v.record;
  return {x.name,      x.fleet,       x.zone,       x.queued,   x.type,
          x.capacity,  x.reason,      x.last_error, v.age.count(), v.cost_usd,
          v.cost_is_upper_bound};
}

api::FamilyFacts FactsOf(const Catalog& catalog, const Family& f) {
  api::FamilyFacts facts;
  facts.family = f.name;
  facts.generation = f.generation;
  facts.api_type = f.api_type;
  facts.suffix_counts = f.suffix == SuffixUnit::kChips ? "chips" : "tensor_cores";
  facts.hbm_gib_per_chip = f.hbm_gib_per_chip;
  facts.devices_per_chip = f.devices_per_chip;
  facts.hbm_gib_per_device = f.hbm_gib_per_device();
  facts.runtime_versions = f.runtime_versions;
  facts.zones = f.zones;
  facts.source = f.source;
  if (!f.price_note.empty()) {
    facts.price_note = f.price_note;
  }
  if (const RegionPrice* p = catalog.PriceFor(f)) {
    facts.price_per_chip_hour = p->on_demand;
    facts.price_region = p->region;
  }
  if (auto range = catalog.SpotDiscountRange(f)) {
    facts.spot_discount_min = range->first;
    facts.spot_discount_max = range->second;
  }
  return facts;
}

}  // namespace

std::vector<api::NodeOutcome> ToApi(const std::vector<NodeOutcome>& outcomes) {
  std::vector<api::NodeOutcome> out;
  for (const NodeOutcome& o : outcomes) {
    out.push_back({o.node, o.changed, api::ErrorOf(o.status)});
  }
  return out;
}

api::UpPlan ToApi(const UpPlan& plan) {
  api::UpPlan out;
  for (const NodePlan& p : plan.nodes) {
    out.nodes.push_back({p.node, std::string(PlanActionName(p.action)), p.zones,
                         p.state.Name(), p.detail, p.setup_reruns, p.spec->type, std::string(CapacityName(p.spec->capacity)),
                         p.usd_per_hour});
    out.usd_per_hour += p.usd_per_hour;
  }
  out.leftovers = Leftovers(plan.leftovers);
  out.untracked = Untracked(plan.untracked);
  return out;
}

api::UpReport ToApi(const UpReport& report, const std::string& fleet,
                    const std::string& ssh_config) {
  api::UpReport out;
  out.fleet = fleet;
  out.nodes = ToApi(report.nodes);
  out.not_in_spec = report.not_in_spec;
  out.leftovers_tried = LeftoversTried(report.leftovers);
  out.leftovers = Leftovers(report.leftovers_left);
  out.untracked = Untracked(report.untracked);
  out.ssh_config = ssh_config;
  return out;
}

api::DownReport ToApi(const DownReport& report) {
  return {ToApi(report.nodes), LeftoversTried(report.leftovers)};
}

api::StatusReport ToApi(const FleetStatusReport& report) {
  api::StatusReport out;
  for (const NodeView& v : report.nodes) {
    out.nodes.push_back(NodeStatusOf(v));
  }
  for (const LeftoverView& v : report.leftovers) {
    out.leftovers.push_back(LeftoverStatusOf(v));
  }
  out.untracked = Untracked(report.untracked);
  api::ServeStatus& serve = out.serve.emplace();
  serve.running = report.serve.running;
  if (const std::optional<ServeRecord>& r = report.serve.record) {
    serve.recorded = true;
    serve.pid = r->pid;
    serve.host = r->host;
    serve.fleets = r->fleets;
    serve.last_pass_seconds_ago = report.serve.since_last_pass.count();
  }
  out.states_age_seconds = report.states_age.count();
  return out;
}

api::CopyReport ToApi(const CopyReport& report, double seconds) {
  api::CopyReport out;
  for (const CopyOutcome& w : report.workers) {
    out.workers.push_back({w.worker.name, w.ok, w.how, w.message});
  }
  out.bytes = report.bytes;
  out.seconds = seconds;
  out.security_events = report.security_events;
  out.ok = report.ok();
  return out;
}

std::vector<api::CatalogFamily> ToApi(const Catalog& catalog) {
  std::vector<api::CatalogFamily> out;
  for (const Family& f : catalog.families()) {
    api::CatalogFamily family{FactsOf(catalog, f), f.sizes, {}};
    for (int n : f.sizes) {
      family.types.push_back(f.name + "-" + std::to_string(n));
    }
    out.push_back(std::move(family));
  }
  return out;
}

api::CatalogType ToApi(const Catalog& catalog, const AcceleratorType& t) {
  const Family& f = *t.family;
  api::CatalogType out;
  out.facts = FactsOf(catalog, f);
  out.type = t.name;
  out.chips = t.chips;
  out.workers = t.workers;
  out.chips_per_worker = t.chips_per_worker;
  out.tensor_cores = t.tensor_cores;
  out.devices = t.devices;
  if (!t.topology.empty()) {
    out.topology = t.topology;
  }
  out.hbm_gib_total = t.hbm_gib_total();
  if (t.host) {
    out.host_machine_type = t.host->machine_type;
    out.host_vcpus_per_worker = t.host->vcpus;
    out.host_ram_gib_per_worker = t.host->ram_gib;
    out.host_ram_gib_total = t.host_ram_gib_total();
  }
  out.default_runtime_version = f.runtime_versions.front();
  if (const RegionPrice* p = catalog.PriceFor(f)) {
    api::TypePrice price{p->on_demand * t.chips, std::nullopt, std::nullopt};
    if (auto range = catalog.SpotDiscountRange(f)) {
      price.spot_usd_per_hour_min = p->on_demand * t.chips * (1 - range->second);
      price.spot_usd_per_hour_max = p->on_demand * t.chips * (1 - range->first);
    }
    out.price = price;
  }
  return out;
}

std::vector<api::PlanOption> ToApi(const Plan& plan) {
  std::vector<api::PlanOption> out;
  for (const PlanOption& o : plan.options) {
    const AcceleratorType& t = o.type;
    api::PlanOption a;
    a.type = t.name;
    a.family = t.family->name;
    a.chips = t.chips;
    a.workers = t.workers;
    a.devices = t.devices;
    a.devices_per_chip = t.family->devices_per_chip;
    a.hbm_gib_per_device = t.family->hbm_gib_per_device();
    a.devices_per_replica = o.devices_per_replica;
    a.chips_per_replica = o.chips_per_replica;
    a.sharded = o.devices_per_replica > 1;
    a.layout = o.Layout();
    a.replicas_that_fit = o.replicas_that_fit;
    a.host_ram_gib_per_worker = t.host->ram_gib;
    if (o.priced) {
      a.usd_per_hour = o.usd_per_hour;
    }
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace tpufleet::cli
