// The fleet spec's top level: fleet, provider, project, budget, users and monitoring, and the
// checks across node entries. A node entry is parsed in fleet_spec_node.cc, the
// document's shape checked in fleet_spec_document.cc.
#include "core/fleet_spec.h"

#include <algorithm>
#include <set>
#include <utility>

#include "core/fleet_spec_internal.h"
#include "core/yaml_reader.h"
#include "util/strings.h"

namespace tpufleet {
namespace fleet_spec_internal {

Status At(const Field& f, const Status& s) {
  return s.ok() ? s : f.Error(s.message());
}

Result<std::string> Word(const Field& f, size_t max_bytes) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string s, f.String());
  if (s.size() > max_bytes) {
    return f.Error("expected at most " + std::to_string(max_bytes) + " characters, found " +
                   std::to_string(s.size()));
  }
  return s;
}

Result<std::vector<std::pair<std::string, Field>>> StringItems(const Field& f, size_t max_bytes) {
  std::vector<std::pair<std::string, Field>> out;
  if (!f.IsSequence()) {
    TPUFLEET_ASSIGN_OR_RETURN(std::string one, Word(f, max_bytes));
    out.emplace_back(std::move(one), f);
    return out;
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<Field> items, f.Items());
  for (const Field& item : items) {
    TPUFLEET_ASSIGN_OR_RETURN(std::string s, Word(item, max_bytes));
    out.emplace_back(std::move(s), item);
  }
  return out;
}

Result<std::chrono::seconds> PositiveDuration(const Field& f) {
  TPUFLEET_ASSIGN_OR_RETURN(std::chrono::seconds d, f.Duration());
  if (d.count() <= 0) {
    return f.Error("expected a duration above zero, like 30m, 6h or 2d");
  }
  return d;
}

namespace {

Status ParseUser(const Field& f, UserSpec* user) {
  TPUFLEET_TRY(f.CheckKeys({"name", "keys", "sudo"}));
  user->line = f.line();
  TPUFLEET_ASSIGN_OR_RETURN(Field name, f.Require("name"));
  TPUFLEET_ASSIGN_OR_RETURN(user->name, name.String());
  TPUFLEET_TRY(At(name, CheckUserName(user->name)));
  TPUFLEET_ASSIGN_OR_RETURN(Field keys, f.Require("keys"));
  // No cap here: CheckSshPublicKey refuses long keys with a better message.
  TPUFLEET_ASSIGN_OR_RETURN(auto items, StringItems(keys, std::string::npos));
  if (items.empty()) {
    return keys.Error("expected at least one SSH public key for " + user->name);
  }
  std::set<std::string> seen;
  for (auto& [key, item] : items) {
    TPUFLEET_TRY(At(item, CheckSshPublicKey(key)));
    if (!seen.insert(key).second) {
      return item.Error("this key is listed twice for " + user->name);
    }
    user->keys.push_back(std::move(key));
  }
  if (auto sudo = f.Get("sudo")) {
    TPUFLEET_ASSIGN_OR_RETURN(user->sudo, sudo->Bool());
  }
  return Status::Ok();
}

}  // namespace

Status ParseUsers(const Field& f, const std::map<std::string, std::string>& taken,
                  std::vector<UserSpec>* users) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<Field> items, f.Items());
  std::map<std::string, std::string> seen = taken;
  for (const Field& item : items) {
    UserSpec user;
    TPUFLEET_TRY(ParseUser(item, &user));
    auto [it, fresh] = seen.emplace(user.name, item.path());
    if (!fresh) {
      TPUFLEET_ASSIGN_OR_RETURN(Field name, item.Require("name"));
      return name.Error(user.name + " is already given in " + it->second +
                        "; give each user once (fleet-wide users are on every node)");
    }
    users->push_back(std::move(user));
  }
  return Status::Ok();
}

}  // namespace fleet_spec_internal

namespace {

using fleet_spec_internal::At;
using fleet_spec_internal::kBudgetActionSpellings;
using fleet_spec_internal::CheckDocumentShape;
using fleet_spec_internal::Choice;
using fleet_spec_internal::IsDigit;
using fleet_spec_internal::IsLower;
using fleet_spec_internal::kCapacitySpellings;
using fleet_spec_internal::kDiskModeSpellings;
using fleet_spec_internal::kIdleActionSpellings;
using fleet_spec_internal::kProviderSpellings;
using fleet_spec_internal::ParseNode;
using fleet_spec_internal::ParseUsers;
using fleet_spec_internal::SpellingOf;
using yaml::Field;

Result<double> PositiveUsd(const Field& f) {
  TPUFLEET_ASSIGN_OR_RETURN(double v, f.Number());
  if (v <= 0) {
    return f.Error("expected an amount of US dollars above zero");
  }
  return v;
}

Status ParseProject(const Field& root, FleetSpec* spec) {
  std::optional<Field> project = root.Get("project");
  if (spec->provider == Provider::kSshHosts) {
    if (project) {
      return root.KeyError("project", "not used with provider ssh-hosts");
    }
    return Status::Ok();
  }
  if (!project && spec->provider == Provider::kEmulator) {
    spec->project = "tpufleet-emulator";  // the emulator serves any project id
    return Status::Ok();
  }
  TPUFLEET_ASSIGN_OR_RETURN(Field p, root.Require("project"));
  TPUFLEET_ASSIGN_OR_RETURN(spec->project, p.String());
  // The TPU API takes a project number as well as an id in resource names.
  const std::string& id = spec->project;
  bool number = id.size() <= 20 && std::all_of(id.begin(), id.end(), IsDigit);
  bool valid_id = id.size() >= 6 && id.size() <= 30 && IsLower(id.front()) && id.back() != '-' &&
                  std::all_of(id.begin(), id.end(),
                              [](char c) { return IsLower(c) || IsDigit(c) || c == '-'; });
  if (!number && !valid_id) {
    return p.Error(
        "expected a GCP project id: 6 to 30 lowercase letters, digits and hyphens, "
        "starting with a letter (the id, not the display name), or a project number");
  }
  return Status::Ok();
}

Status ParseBudget(const Field& f, BudgetSpec* budget) {
  TPUFLEET_TRY(f.CheckKeys({"usd_per_day", "usd_total", "action"}));
  if (auto day = f.Get("usd_per_day")) {
    TPUFLEET_ASSIGN_OR_RETURN(budget->usd_per_day, PositiveUsd(*day));
  }
  if (auto total = f.Get("usd_total")) {
    TPUFLEET_ASSIGN_OR_RETURN(budget->usd_total, PositiveUsd(*total));
  }
  if (!budget->usd_per_day && !budget->usd_total) {
    return f.Error("give usd_per_day, usd_total or both");
  }
  if (auto action = f.Get("action")) {
    TPUFLEET_ASSIGN_OR_RETURN(budget->action,
                              Choice<BudgetAction>(*action, kBudgetActionSpellings));
  }
  return Status::Ok();
}

Status ParseMonitoring(const Field& f, MonitoringSpec* monitoring) {
  TPUFLEET_TRY(f.CheckKeys({"prometheus_port"}));
  TPUFLEET_ASSIGN_OR_RETURN(Field port, f.Require("prometheus_port"));
  TPUFLEET_ASSIGN_OR_RETURN(long long p, port.Int());
  if (p < kMinPrometheusPort || p > kMaxPrometheusPort) {
    return port.Error("expected a TCP port from " + std::to_string(kMinPrometheusPort) + " to " +
                      std::to_string(kMaxPrometheusPort) + " (9100 is Prometheus' usual), found " +
                      std::to_string(p));
  }
  monitoring->prometheus_port = static_cast<int>(p);
  return Status::Ok();
}

}  // namespace

std::string_view ProviderName(Provider p) {
  return SpellingOf<Provider>(kProviderSpellings, p);
}

std::string_view CapacityName(Capacity c) {
  return SpellingOf<Capacity>(kCapacitySpellings, c);
}

std::string_view DiskModeName(DiskMode m) {
  return SpellingOf<DiskMode>(kDiskModeSpellings, m);
}

std::string_view IdleActionName(IdleAction a) {
  return SpellingOf<IdleAction>(kIdleActionSpellings, a);
}

std::string_view BudgetActionName(BudgetAction a) {
  return SpellingOf<BudgetAction>(kBudgetActionSpellings, a);
}

Result<FleetSpec> ParseFleetSpec(std::string_view yaml_text, std::string_view origin,
                                 const Catalog& catalog) {
  // Size first: yaml-cpp builds a tree of whatever it is given.
  if (yaml_text.size() > kMaxSpecBytes) {
    return InvalidArgumentError(std::string(origin) + ": the file is " +
                                std::to_string(yaml_text.size() >> 10) +
                                " KiB; a fleet spec may be at most 1 MiB");
  }
  TPUFLEET_ASSIGN_OR_RETURN(Field root, yaml::ParseDocument(yaml_text, origin));
  // Before any walking: the walk below visits an aliased node once per alias.
  TPUFLEET_TRY(CheckDocumentShape(yaml_text, origin));
  TPUFLEET_TRY(
      root.CheckKeys({"fleet", "provider", "project", "owner", "budget", "users", "nodes",
                      "monitoring"}));

  FleetSpec spec;
  TPUFLEET_ASSIGN_OR_RETURN(Field name, root.Require("fleet"));
  TPUFLEET_ASSIGN_OR_RETURN(spec.name, name.String());
  TPUFLEET_TRY(At(name, CheckNodeName(spec.name)));

  if (auto provider = root.Get("provider")) {
    TPUFLEET_ASSIGN_OR_RETURN(spec.provider,
                              Choice<Provider>(*provider, kProviderSpellings));
  }
  TPUFLEET_TRY(ParseProject(root, &spec));
  if (auto owner = root.Get("owner")) {
    TPUFLEET_ASSIGN_OR_RETURN(spec.owner, owner->String());
    TPUFLEET_TRY(At(*owner, CheckLoginName(spec.owner)));
  }

  if (auto budget = root.Get("budget")) {
    if (spec.provider == Provider::kSshHosts) {
      return root.KeyError("budget",
                           "not used with provider ssh-hosts: tpufleet does not know "
                           "what those machines cost");
    }
    BudgetSpec b;
    TPUFLEET_TRY(ParseBudget(*budget, &b));
    spec.budget = b;
  }

  if (auto monitoring = root.Get("monitoring")) {
    TPUFLEET_TRY(ParseMonitoring(*monitoring, &spec.monitoring));
  }

  std::map<std::string, std::string> fleet_users;
  if (auto users = root.Get("users")) {
    TPUFLEET_TRY(ParseUsers(*users, {}, &spec.users));
    TPUFLEET_ASSIGN_OR_RETURN(std::vector<Field> items, users->Items());
    for (size_t i = 0; i < spec.users.size(); ++i) {
      fleet_users[spec.users[i].name] = items[i].path();
    }
  }

  TPUFLEET_ASSIGN_OR_RETURN(Field nodes, root.Require("nodes"));
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<Field> items, nodes.Items());
  if (items.empty()) {
    return nodes.Error("expected at least one node");
  }
  // Checks across entries: a node id, a host and a read-write disk each belong to one.
  std::map<std::string, std::string> ids;    // node id -> the entry that makes it
  std::map<std::string, std::string> hosts;  // ssh host -> the entry that has it
  // data disk -> how it was first attached, and by which entry
  std::map<std::string, std::pair<DiskMode, std::string>> disks;
  for (const Field& item : items) {
    NodeSpec node;
    TPUFLEET_TRY(ParseNode(item, spec, catalog, fleet_users, &node));
    TPUFLEET_ASSIGN_OR_RETURN(Field node_name, item.Require("name"));
    for (const std::string& id : node.names) {
      auto [it, fresh] = ids.emplace(id, item.path());
      if (!fresh) {
        std::string from = id == node.name
                               ? ""
                               : " (from this name with count " + std::to_string(node.count) + ")";
        return node_name.Error("node id \"" + id + "\"" + from + " is also made by " + it->second +
                               "; node names must be unique in the fleet");
      }
    }
    for (const std::string& host : node.hosts) {
      auto [it, fresh] = hosts.emplace(host, item.path());
      if (!fresh) {
        TPUFLEET_ASSIGN_OR_RETURN(Field f, item.Require("hosts"));
        return f.Error(host + " is already a host of " + it->second +
                       "; a host belongs to one node");
      }
    }
    for (const DataDiskSpec& disk : node.data_disks) {
      auto [it, fresh] = disks.emplace(disk.source, std::pair{disk.mode, item.path()});
      if (!fresh &&
          (disk.mode == DiskMode::kReadWrite || it->second.first == DiskMode::kReadWrite)) {
        TPUFLEET_ASSIGN_OR_RETURN(Field f, item.Require("data_disks"));
        return f.Error(disk.source + " is also attached by " + it->second.second +
                       "; a disk attached read-write belongs to one node");
      }
    }
    spec.nodes.push_back(std::move(node));
  }
  return spec;
}

std::vector<UserSpec> UsersOn(const FleetSpec& fleet, const NodeSpec& node) {
  std::vector<UserSpec> out = fleet.users;
  out.insert(out.end(), node.users.begin(), node.users.end());
  return out;
}

}  // namespace tpufleet
