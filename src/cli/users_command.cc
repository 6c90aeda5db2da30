// `tpufleet users add / set / list / remove` (control/users.h, docs/users.md).
#include <algorithm>
#include <iterator>

#include "api/users.h"
#include "cli/command.h"
#include "cli/fleet_world.h"
#include "cli/table.h"
#include "control/users.h"
#include "util/strings.h"

namespace tpufleet::cli {
namespace {

constexpr char kActions[] = "add, set, list or remove";

// The key lines of --key FILE (or - for stdin; served: the client's): every line that
// is not blank or a comment. InvalidArgument when there is none.
Result<std::vector<std::string>> ReadKeys(Invocation& inv, const std::string& path) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string text, inv.ReadInputFile(path, kMaxKeyFileBytes));
  std::vector<std::string> keys;
  for (const std::string& line : Split(text, '\n')) {
    std::string_view l = Trim(line);
    if (!l.empty() && l[0] != '#') {
      keys.emplace_back(l);
    }
  }
  if (keys.empty()) {
    return InvalidArgumentError("--key " + path + ": no public key in it");
  }
  return keys;
}

std::vector<std::string> Values(const Invocation& inv, const std::string& flag) {
  auto it = inv.args.all_values.find(flag);
  return it == inv.args.all_values.end() ? std::vector<std::string>() : it->second;
}

// --key, --sudo / --no-sudo, --nodes and --role as a change of user `name`; the checks
// of their values are AddUser's and SetUser's.
Result<UserChange> ChangeFromFlags(Invocation& inv, const std::string& name) {
  UserChange c;
  c.name = name;
  if (std::optional<std::string> key = inv.args.Get("key")) {
    TPUFLEET_ASSIGN_OR_RETURN(c.keys, ReadKeys(inv, *key));
  }
  if (inv.args.Has("sudo") && inv.args.Has("no-sudo")) {
    return InvalidArgumentError("--sudo and --no-sudo together: give one");
  }
  if (inv.args.Has("sudo") || inv.args.Has("no-sudo")) {
    c.sudo = inv.args.Has("sudo");
  }
  if (inv.args.Has("nodes")) {
    std::vector<std::string> words;
    for (const std::string& v : Values(inv, "nodes")) {
      if (v != "all") {
        words.push_back(v);
      }
    }
    c.nodes = words;  // "all" alone: every node (none stored)
  }
  if (std::optional<std::string> role = inv.args.Get("role")) {
    c.role = *role;
  }
  return c;
}

// OK for the operator, the local user and an admin of some fleet; else PermissionDenied.
Status AdminOfSome(const Invocation& inv) {
  std::vector<std::string> fleets = inv.access.Fleets();
  if (inv.access.everything() ||
      std::any_of(fleets.begin(), fleets.end(),
                  [&inv](const std::string& f) { return inv.access.IsAdminOf(f); })) {
    return Status::Ok();
  }
  return PermissionDeniedError("users list needs an admin of a fleet (or the team server's "
                               "operator); " + inv.access.who() + " is not one");
}

api::UserEntry Entry(const UserRecord& u) {
  return {u.fleet, u.name, "added", u.keys, u.sudo, u.nodes, u.role};
}

std::string Workers(int n) { return std::to_string(n) + (n == 1 ? " worker" : " workers"); }

std::string NodesText(const std::vector<std::string>& nodes) {
  return nodes.empty() ? "every node" : Join(nodes, " ");
}

// Prints how a change went and returns the exit status.
ExitStatus Report(Invocation& inv, const Result<UsersOutcome>& out, const std::string& done) {
  if (!out.ok()) {
    return Fail(inv, out.status());
  }
  api::UserChangeReport report;
  report.user = Entry(out->user);
  for (const UserNodeResult& n : out->nodes) {
    report.nodes.push_back({n.node, n.workers, n.skipped, api::ErrorOf(n.status)});
  }
  if (inv.json) {
    inv.out << api::ToJson(report) << "\n";
  } else {
    const UserRecord& u = out->user;
    inv.out << u.name << ": " << done << " (" << (u.sudo ? "sudo" : "no sudo") << ", "
            << NodesText(u.nodes) << ", role " << u.role << ")\n";
    for (const UserNodeResult& n : out->nodes) {
      inv.out << "  " << n.node << ": "
              << (!n.status.ok()      ? "FAILED: " + n.status.message()
                  : !n.skipped.empty() ? "skipped: " + n.skipped
                                       : "done on " + Workers(n.workers))
              << "\n";
    }
    if (out->nodes.empty()) {
      inv.out << "  (no node of the fleet is selected yet: `tpufleet up` makes it there)\n";
    }
  }
  return out->ok() ? ExitStatus::kOk : ExitStatus::kFailure;
}

ExitStatus List(Invocation& inv, World& world, const std::optional<FleetSpec>& spec) {
  std::vector<api::UserEntry> entries;
  if (spec) {
    for (const NodeSpec& n : spec->nodes) {
      for (const UserSpec& u : UsersOn(*spec, n)) {
        auto it = std::find_if(entries.begin(), entries.end(),
                               [&](const api::UserEntry& e) { return e.name == u.name; });
        if (it == entries.end()) {
          entries.push_back({spec->name, u.name, "spec", u.keys, u.sudo, {}, ""});
          it = std::prev(entries.end());
        }
        it->nodes.insert(it->nodes.end(), n.names.begin(), n.names.end());
      }
    }
  }
  Result<std::vector<UserRecord>> stored = world.store.Users(spec ? spec->name : "");
  if (!stored.ok()) {
    return Fail(inv, stored.status());
  }
  for (const UserRecord& u : *stored) {
    if (inv.access.IsAdminOf(u.fleet)) {  // through a team server: the fleets they keep
      entries.push_back(Entry(u));
    }
  }
  if (inv.json) {
    inv.out << api::ToJson(entries) << "\n";
    return ExitStatus::kOk;
  }
  if (entries.empty()) {
    inv.out << "No users: `tpufleet users add NAME --key FILE --spec FLEET.yaml` adds one.\n";
    return ExitStatus::kOk;
  }
  TextTable table({"FLEET", "NAME", "SOURCE", "SUDO", "ROLE", "KEYS", "NODES"});
  for (const api::UserEntry& e : entries) {
    table.AddRow({e.fleet, e.name, e.source, e.sudo ? "yes" : "no", e.role.empty() ? "-" : e.role,
                  std::to_string(e.keys.size()),
                  e.source == "spec" ? Join(e.nodes, " ") : NodesText(e.nodes)});
  }
  table.Print(inv.out);
  return ExitStatus::kOk;
}

}  // namespace

ExitStatus RunUsers(Invocation& inv) {
  const std::vector<std::string>& pos = inv.args.positional;
  if (pos.empty()) {
    return UsageError(inv, std::string("users needs an action: ") + kActions +
                               ", e.g. tpufleet users add milo --key milo.pub --spec fleet.yaml");
  }
  const std::string& action = pos[0];
  if (action != "add" && action != "set" && action != "list" && action != "remove") {
    return UsageError(inv, "users " + action + ": not an action; give " + kActions +
                               DidYouMean(action, {"add", "set", "list", "remove"}));
  }
  if (action == "list" ? pos.size() != 1 : pos.size() != 2) {
    return UsageError(inv, action == "list" ? "users list takes no NAME"
                                            : "users " + action + " needs one NAME");
  }
  std::optional<std::string> spec_path = inv.args.Get("spec");
  if (!spec_path && action != "list") {
    return UsageError(inv, "users " + action +
                               " needs the fleet's spec: --spec FLEET.yaml (its users and nodes "
                               "decide every node's accounts)");
  }
  std::optional<FleetSpec> spec;
  if (spec_path) {
    Result<FleetSpec> loaded = inv.LoadFleetSpec(*spec_path);
    if (!loaded.ok()) {
      return Fail(inv, loaded.status());
    }
    spec = std::move(*loaded);
  }
  // Collaborators are the admins' business: of the spec's fleet, or (a list of every
  // fleet's) of some fleet, whose rows alone List shows.
  if (Status s = spec ? RequireAdminOf(inv, spec->name, "users " + action) : AdminOfSome(inv);
      !s.ok()) {
    return Fail(inv, s);
  }
  Result<UserChange> change = ChangeFromFlags(inv, action == "list" ? "" : pos[1]);
  if (!change.ok()) {
    return Fail(inv, change.status());
  }
  Result<std::unique_ptr<WorldHandle>> handle = OpenWorld(inv, action != "list");
  if (!handle.ok()) {
    return Fail(inv, handle.status());
  }
  World& world = (*handle)->world();
  if (action == "list") {
    return List(inv, world, spec);
  }
  UserProgress progress = [&inv](const UserNodeResult& n, bool done) {
    if (!done && !inv.json) {
      inv.err << n.node << ": applying on " << Workers(n.workers) << "\n";
    }
  };
  if (action == "add") {
    return Report(inv, AddUser(world, *spec, *change, progress), "added to fleet " + spec->name);
  }
  if (action == "set") {
    return Report(inv, SetUser(world, *spec, *change, progress), "changed");
  }
  bool purge = inv.args.Has("purge");
  return Report(inv, RemoveUser(world, *spec, pos[1], purge, progress),
                purge ? "removed, account and home purged" : "removed (home kept)");
}

}  // namespace tpufleet::cli
