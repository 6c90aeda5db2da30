// validate: checks a fleet spec and shows what `up` would ask the cloud for.
#include <ostream>

#include "api/catalog.h"
#include "cli/command.h"
#include "cli/table.h"
#include "core/cost.h"
#include "core/fleet_spec.h"
#include "util/file.h"
#include "util/strings.h"

namespace tpufleet::cli {
namespace {

// What one node entry costs per hour on demand, and where that price comes from.
struct NodeCost {
  std::optional<double> usd_per_hour;  // nullopt for ssh-hosts, or no price at all
  std::optional<std::pair<double, double>> spot_per_hour;  // for spot nodes: min, max
  std::string region;                                      // the price row's region
  std::string note;  // "" or why another region's price was used
};

NodeCost CostOf(const Catalog& catalog, const NodeSpec& node) {
  NodeCost cost;
  if (node.type.empty()) {
    return cost;
  }
  Result<AcceleratorType> type = catalog.Lookup(node.type);
  if (!type.ok()) {
    return cost;  // cannot happen: ParseFleetSpec resolved it against this catalog
  }
  // Priced where `up` tries first; the reference region when that region has no price.
  Result<CostEstimate> e = EstimateCost(catalog, *type, 1, node.count, node.zones.front());
  if (!e.ok()) {
    e = EstimateCost(catalog, *type, 1, node.count);
    if (!e.ok()) {
      cost.note = "the catalog has no price for " + node.family;
      return cost;
    }
    cost.note = RegionOfZone(node.zones.front()) + " has no price in the catalog";
  }
  cost.usd_per_hour = e->usd_per_hour;
  cost.region = e->price->region;
  if (node.capacity == Capacity::kSpot && e->spot_min_usd) {
    cost.spot_per_hour = std::pair{*e->spot_min_usd, *e->spot_max_usd};
  }
  return cost;
}

// "a, b, c" for a few names, "a-0 .. a-255 (256 nodes)" for many.
std::string NamesText(const NodeSpec& node) {
  if (node.names.size() <= 4) {
    return Join(node.names, ", ");
  }
  return node.names.front() + " .. " + node.names.back() + " (" +
         std::to_string(node.names.size()) + " nodes)";
}

std::string SliceText(const NodeSpec& node) {
  std::string each = node.count > 1 ? " each" : "";
  return std::to_string(node.count) + " x " + node.type + " (" + std::to_string(node.chips) +
         " chips, " + std::to_string(node.workers) + (node.workers == 1 ? " worker" : " workers") +
         each + ")";
}

std::string RequestText(const NodeSpec& node) {
  std::string out(CapacityName(node.capacity));
  if (!node.queued) {
    return out + ", created directly";
  }
  out += ", queued";
  if (node.queued->valid_until) {
    out += " (gives up after " + FormatDuration(*node.queued->valid_until) + ")";
  } else {
    out += " (waits without a deadline)";
  }
  return out;
}

std::string UsersText(const std::vector<UserSpec>& users) {
  std::vector<std::string> parts;
  for (const UserSpec& u : users) {
    parts.push_back(u.name + (u.sudo ? " (sudo)" : ""));
  }
  return Join(parts, ", ");
}

// The rows that describe one node: its names and slices, then indented details.
std::vector<std::vector<std::string>> NodeRows(const FleetSpec& spec, const NodeSpec& node,
                                               const NodeCost& cost) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({NamesText(node), node.type.empty()
                                       ? std::to_string(node.hosts.size()) +
                                             (node.hosts.size() == 1 ? " host" : " hosts")
                                       : SliceText(node)});
  if (!node.hosts.empty()) {
    rows.push_back({"  hosts", Join(node.hosts, ", ")});
    std::string login = node.ssh_user.empty() ? "from your ssh config" : node.ssh_user;
    std::string port = node.port == 0 ? "" : ", port " + std::to_string(node.port);
    rows.push_back({"  ssh", "user " + login + port});
  } else {
    rows.push_back({"  capacity", RequestText(node)});
    rows.push_back({"  zones", Join(node.zones, ", ") +
                                   (node.zones.size() > 1 ? " (tried in this order)" : "") +
                                   (node.zones_defaulted ? " [default]" : "")});
    rows.push_back(
        {"  runtime", node.runtime_version + (node.runtime_version_defaulted ? " [default]" : "")});
  }
  for (const DataDiskSpec& d : node.data_disks) {
    rows.push_back({"  disk", d.source + " (" + std::string(DiskModeName(d.mode)) + ")"});
  }
  if (node.ttl || node.idle) {
    std::vector<std::string> parts;
    if (node.ttl) {
      parts.push_back("deleted " + FormatDuration(*node.ttl) + " after creation");
    }
    if (node.idle) {
      parts.push_back(
          std::string(node.idle->action == IdleAction::kDelete ? "deleted" : "stopped") +
          " after " + FormatDuration(node.idle->after) + " idle");
    }
    rows.push_back({"  lifetime", Join(parts, "; ")});
  }
  if (node.spot_fallback) {
    rows.push_back({"  spot fallback",
                    "on demand after " + std::to_string(node.spot_fallback->after) +
                        (node.spot_fallback->after == 1 ? " loss" : " losses") + " within " +
                        FormatDuration(node.spot_fallback->within) + ", spot again after that"});
  }
  std::vector<UserSpec> users = UsersOn(spec, node);
  if (!users.empty()) {
    rows.push_back({"  users", UsersText(users)});
  }
  if (cost.usd_per_hour) {
    std::string text = FormatUsd(*cost.usd_per_hour) + "/h on demand";
    text += cost.note.empty() ? " in " + cost.region
                              : " at the " + cost.region + " list price (" + cost.note + ")";
    if (cost.spot_per_hour) {
      const auto& [low, high] = *cost.spot_per_hour;
      text += "; as spot about " + FormatUsd(low) +
              (FormatUsd(low) == FormatUsd(high) ? "" : " to " + FormatUsd(high)) + "/h";
    }
    rows.push_back({"  cost", text});
  } else if (!cost.note.empty()) {
    rows.push_back({"  cost", "unknown: " + cost.note});
  }
  return rows;
}

// What serve does at the budget (core/fleet_spec.h BudgetAction), as a sentence's end.
std::string_view BudgetActionText(BudgetAction action) {
  switch (action) {
    case BudgetAction::kStopCreating:
      return "creates nothing more (running nodes keep running)";
    case BudgetAction::kDeleteSpot:
      return "creates nothing more and deletes the spot nodes";
    case BudgetAction::kDeleteAll:
      return "creates nothing more and deletes every node (data disks are kept)";
  }
  return "";
}

api::ValidatedNode ValidatedNodeOf(const NodeSpec& node, const NodeCost& cost) {
  bool tpu = !node.type.empty();
  api::ValidatedNode n;
  n.name = node.name;
  n.names = node.names;
  n.count = node.count;
  n.workers = node.workers;
  n.queued = node.queued.has_value();
  if (node.queued && node.queued->valid_until) {
    n.queued_valid_until_seconds = node.queued->valid_until->count();
  }
  n.zones = node.zones;
  n.usd_per_hour = cost.usd_per_hour;
  if (!cost.region.empty()) {
    n.price_region = cost.region;
  }
  if (node.ttl) {
    n.ttl_seconds = node.ttl->count();
  }
  if (node.idle) {
    n.idle = api::ValidatedNode::Idle{node.idle->after.count(),
                                      std::string(IdleActionName(node.idle->action))};
  }
  if (node.spot_fallback) {
    n.spot_fallback =
        api::ValidatedNode::SpotFallback{node.spot_fallback->after, node.spot_fallback->within.count()};
  }
  if (tpu) {
    n.type = node.type;
    n.chips = node.chips;
    n.capacity = std::string(CapacityName(node.capacity));
    n.runtime_version = node.runtime_version;
  } else {
    n.hosts = node.hosts;
  }
  return n;
}

}  // namespace

ExitStatus RunValidate(Invocation& inv) {
  if (inv.args.positional.size() != 1) {
    return UsageError(inv,
                      "validate needs exactly one fleet spec, e.g. tpufleet validate fleet.yaml");
  }
  const std::string& path = inv.args.positional[0];
  Result<FleetSpec> spec = inv.LoadFleetSpec(path);
  if (!spec.ok()) {
    return Fail(inv, spec.status());
  }
  Result<const Catalog*> catalog = inv.LoadCatalog();

  std::vector<NodeCost> costs;
  double per_hour = 0;
  int unpriced = 0;  // Cloud TPU entries the catalog has no price for (TPU7x today)
  for (const NodeSpec& node : spec->nodes) {
    costs.push_back(CostOf(**catalog, node));
    per_hour += costs.back().usd_per_hour.value_or(0);
    unpriced += !node.type.empty() && !costs.back().usd_per_hour;
  }
  // On-demand list prices: the most the fleet can cost, which is what a budget guards.
  double per_day = per_hour * 24;
  std::vector<std::string> warnings;
  if (spec->budget && spec->budget->usd_per_day && per_day > *spec->budget->usd_per_day) {
    warnings.push_back("at on-demand prices the fleet costs " + FormatUsd(per_day) +
                       " a day, more than its budget of " + FormatUsd(*spec->budget->usd_per_day) +
                       " a day");
  }

  if (inv.json) {
    api::ValidateReport report;
    report.fleet = spec->name;
    report.provider = std::string(ProviderName(spec->provider));
    if (!spec->project.empty()) {
      report.project = spec->project;
    }
    for (size_t i = 0; i < spec->nodes.size(); ++i) {
      report.nodes.push_back(ValidatedNodeOf(spec->nodes[i], costs[i]));
    }
    report.usd_per_hour = per_hour;
    report.usd_per_day = per_day;
    if (spec->budget) {
      report.budget = api::ValidatedBudget{spec->budget->usd_per_day, spec->budget->usd_total,
                                           std::string(BudgetActionName(spec->budget->action))};
    }
    if (spec->monitoring.prometheus_port != 0) {
      report.prometheus_port = spec->monitoring.prometheus_port;
    }
    report.warnings = warnings;
    inv.out << api::ToJson(report) << "\n";
    return ExitStatus::kOk;
  }

  inv.out << path << " is valid: fleet " << spec->name << " on " << ProviderName(spec->provider)
          << (spec->project.empty() ? "" : ", project " + spec->project) << "\n\n";
  // One table for every node, so the details line up across nodes.
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < spec->nodes.size(); ++i) {
    auto more = NodeRows(*spec, spec->nodes[i], costs[i]);
    rows.insert(rows.end(), more.begin(), more.end());
    rows.push_back({""});
  }
  TextTable table(rows.front());
  for (size_t i = 1; i < rows.size(); ++i) {
    table.AddRow(rows[i]);
  }
  table.Print(inv.out);
  if (spec->provider != Provider::kSshHosts) {
    inv.out << "On demand the fleet costs " << FormatUsd(per_hour) << " an hour, "
            << FormatUsd(per_day) << " a day (list prices; spot nodes cost less"
            << (unpriced == 0 ? std::string()
                              : "; " + std::to_string(unpriced) +
                                    (unpriced == 1 ? " entry has no price and is"
                                                   : " entries have no price and are") +
                                    " not counted")
            << ").\n";
  }
  if (spec->budget) {
    std::vector<std::string> parts;
    if (spec->budget->usd_per_day) {
      parts.push_back(FormatUsd(*spec->budget->usd_per_day) + " a day");
    }
    if (spec->budget->usd_total) {
      std::string total = FormatUsd(*spec->budget->usd_total) + " in all";
      if (per_day > 0) {
        total += " (" + FormatNumber(*spec->budget->usd_total / per_day, 1) + " days at that rate)";
      }
      parts.push_back(total);
    }
    inv.out << "Budget: " << Join(parts, ", ") << "; once spent, `tpufleet serve` "
            << BudgetActionText(spec->budget->action) << ".\n";
  }
  if (spec->monitoring.prometheus_port != 0) {
    inv.out << "Monitoring: every worker's agent serves Prometheus metrics on port "
            << spec->monitoring.prometheus_port << ", on all its addresses.\n";
  }
  for (const std::string& w : warnings) {
    inv.err << "tpufleet: warning: " << w << "\n";
  }
  return ExitStatus::kOk;
}

}  // namespace tpufleet::cli
