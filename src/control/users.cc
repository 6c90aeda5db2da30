#include "control/users.h"

#include <algorithm>
#include <iterator>
#include <set>

#include "control/access.h"
#include "control/agent_client.h"
#include "control/agent_install.h"
#include "control/node_accounts.h"
#include "control/targets.h"

namespace tpufleet {
namespace {

// The spec's user named `name`, fleet-wide or of any node; null when none.
const UserSpec* SpecUser(const FleetSpec& fleet, const std::string& name) {
  auto named = [&](const UserSpec& u) { return u.name == name; };
  if (auto it = std::find_if(fleet.users.begin(), fleet.users.end(), named);
      it != fleet.users.end()) {
    return &*it;
  }
  for (const NodeSpec& n : fleet.nodes) {
    if (auto it = std::find_if(n.users.begin(), n.users.end(), named); it != n.users.end()) {
      return &*it;
    }
  }
  return nullptr;
}

Status InTheSpec(const FleetSpec& fleet, const UserSpec& s, const char* verb) {
  return InvalidArgumentError(s.name + " is a user of fleet " + fleet.name + "'s spec (line " +
                              std::to_string(s.line) + "): " + verb +
                              " it there, then run `tpufleet up`");
}

// The spec's node entry of node id `node`; null when the spec has none.
const NodeSpec* SpecOf(const FleetSpec& fleet, const std::string& node) {
  for (const NodeSpec& n : fleet.nodes) {
    if (std::find(n.names.begin(), n.names.end(), node) != n.names.end()) {
      return &n;
    }
  }
  return nullptr;
}

// Everything a change may not be (users.h), checked before anything is changed.
Status CheckUser(World& world, const FleetSpec& fleet, const UserRecord& u) {
  TPUFLEET_TRY(CheckUserName(u.name));
  if (const UserSpec* s = SpecUser(fleet, u.name); s != nullptr) {
    return InTheSpec(fleet, *s, "change");
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> records, world.store.Nodes(fleet.name));
  std::set<std::string> logins = {world.login};
  for (const NodeRecord& r : records) {
    logins.insert(r.login);
  }
  if (logins.count(u.name) != 0) {
    return InvalidArgumentError(u.name + " is the account tpufleet itself logs in as on the " +
                                "nodes; pick another name");
  }
  if (u.keys.empty()) {
    return InvalidArgumentError("no key for " + u.name + ": give --key FILE (or - for stdin)");
  }
  for (const std::string& k : u.keys) {
    TPUFLEET_TRY(CheckSshPublicKey(k).WithContext("the key of " + u.name));
  }
  for (const std::string& w : u.nodes) {
    TPUFLEET_TRY(CheckNodeSelector(w).WithContext("--nodes"));
  }
  TPUFLEET_TRY(ParseRole(u.role).status());
  return Status::Ok();
}

// What failed in one worker's answer (AccountsReportFailures), "" when it applied
// everything.
std::string WorkerFailure(const AgentReply& reply, const std::vector<api::AccountRemoval>& remove) {
  if (!reply.status.ok()) {
    return reply.status.message();
  }
  const auto* report = std::get_if<api::AccountsReport>(&reply.body);
  return report == nullptr ? "the agent's answer has no results"
                           : AccountsReportFailures(*report, remove);
}

// Applies the node's whole list (and `remove`) on every worker of `r` that has an agent.
UserNodeResult ApplyOnNode(World& world, const FleetSpec& fleet, const NodeRecord& r,
                           const std::vector<UserRecord>& stored,
                           const std::vector<api::AccountRemoval>& remove,
                           const UserProgress& progress) {
  UserNodeResult out;
  out.node = r.name;
  const NodeSpec* spec = SpecOf(fleet, r.name);
  if (spec == nullptr) {
    out.skipped = "not in the spec any more";
    return out;
  }
  if (r.state != NodeState::kReady || r.workers.empty()) {
    out.skipped = r.state.Name() + ": applied when `tpufleet up` or serve brings it back";
    // Its removals too: the list alone would leave the account unlocked there.
    out.status = RecordRemovalsPending(world.store, world.clock, fleet.name, r.name, remove);
    return out;
  }
  Result<std::vector<WorkerTarget>> all = ResolveTargets(world.store, {r.name});
  if (!all.ok()) {
    out.status = all.status();
    return out;
  }
  std::vector<WorkerTarget> workers;
  for (const WorkerTarget& t : *all) {
    auto w = std::find_if(r.workers.begin(), r.workers.end(),
                          [&](const WorkerRecord& x) { return x.index == t.worker; });
    if (t.fleet == fleet.name && w != r.workers.end() && w->agent_sha256 != kAgentNotInstallable) {
      workers.push_back(t);
    }
  }
  out.workers = static_cast<int>(workers.size());
  if (workers.empty()) {
    out.skipped = "no worker has the agent (its login has no passwordless sudo)";
    return out;
  }
  if (progress) {
    progress(out, false);
  }
  std::vector<UserSpec> users = UsersOfNode(fleet, *spec, r.name, stored);
  AgentCall call;
  call.request = AccountsRequest(users);
  call.request.remove = remove;
  call.admin = true;
  call.timeout = kUsersApplyTimeout;
  Result<std::vector<AgentReply>> replies = CallAgents(world, workers, call);
  if (!replies.ok()) {
    out.status = replies.status();
  }
  for (size_t i = 0; replies.ok() && i < replies->size() && out.status.ok(); ++i) {
    if (std::string f = WorkerFailure((*replies)[i], remove); !f.empty()) {
      out.status = FailedPreconditionError(workers[i].name + ": " + f);
    }
  }
  if (out.status.ok()) {  // every worker with an agent applied it, as up records it
    out.status = RecordAccountsApplied(world.store, world.clock, fleet.name, r.name, users);
  }
  return out;
}

// Stores nothing; applies on the fleet's nodes that `before` or `after` select (either
// may be null) with the stored users as they are now.
Result<UsersOutcome> Apply(World& world, const FleetSpec& fleet, const UserRecord* before,
                           const UserRecord* after, const std::vector<api::AccountRemoval>& remove,
                           const UserProgress& progress) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<UserRecord> stored, world.store.Users(fleet.name));
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> records, world.store.Nodes(fleet.name));
  UsersOutcome out;
  out.user = after != nullptr ? *after : before != nullptr ? *before : UserRecord{};
  for (const NodeRecord& r : records) {
    const NodeSpec* spec = SpecOf(fleet, r.name);
    const auto& labels = spec != nullptr ? spec->labels : r.labels;
    bool on = (before == nullptr && after == nullptr) ||
              (before != nullptr && UserSelectsNode(*before, r.name, labels)) ||
              (after != nullptr && UserSelectsNode(*after, r.name, labels));
    if (!on) {
      continue;
    }
    out.nodes.push_back(ApplyOnNode(world, fleet, r, stored, remove, progress));
    if (progress) {
      progress(out.nodes.back(), true);
    }
  }
  return out;
}

Result<std::optional<UserRecord>> Stored(World& world, const FleetSpec& fleet,
                                         const std::string& name) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<UserRecord> stored, world.store.Users(fleet.name));
  for (UserRecord& u : stored) {
    if (u.name == name) {
      return std::optional<UserRecord>(std::move(u));
    }
  }
  return std::optional<UserRecord>();
}

// Forgets `name`'s team-server tokens (control/person_tokens.h) once they are a
// collaborator of no fleet: an invite of theirs then lets no one in, even should the same
// name be added again later.
Status ForgetTokensOfNobody(Store& store, const std::string& name) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<UserRecord> rows, store.Users(""));
  for (const UserRecord& u : rows) {
    if (u.name == name) {
      return Status::Ok();
    }
  }
  return store.DeleteTokens(name);
}

}  // namespace

bool UsersOutcome::ok() const {
  return std::all_of(nodes.begin(), nodes.end(),
                     [](const UserNodeResult& n) { return n.status.ok(); });
}

std::vector<UserSpec> UsersOfNode(const FleetSpec& fleet, const NodeSpec& spec,
                                  const std::string& node, const std::vector<UserRecord>& stored) {
  std::vector<UserSpec> out = UsersOn(fleet, spec);
  std::vector<const UserRecord*> chosen;
  for (const UserRecord& u : stored) {
    if (u.fleet == fleet.name && SpecUser(fleet, u.name) == nullptr &&
        UserSelectsNode(u, node, spec.labels)) {
      chosen.push_back(&u);
    }
  }
  std::sort(chosen.begin(), chosen.end(),
            [](const UserRecord* a, const UserRecord* b) { return a->name < b->name; });
  for (const UserRecord* u : chosen) {
    out.push_back({u->name, u->keys, u->sudo, 0});
  }
  return out;
}

Result<std::vector<UserSpec>> UsersOfNode(Store& store, const FleetSpec& fleet,
                                          const NodeSpec& spec, const std::string& node) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<UserRecord> stored, store.Users(fleet.name));
  return UsersOfNode(fleet, spec, node, stored);
}

Result<UsersOutcome> AddUser(World& world, const FleetSpec& fleet, const UserChange& change,
                             const UserProgress& progress) {
  UserRecord u;
  u.fleet = fleet.name;
  u.name = change.name;
  u.keys = change.keys.value_or(std::vector<std::string>());
  u.sudo = change.sudo.value_or(false);
  u.nodes = change.nodes.value_or(std::vector<std::string>());
  u.role = change.role.value_or(std::string(RoleName(Role::kMember)));
  u.created_at = u.updated_at = world.clock.Now();
  TPUFLEET_TRY(CheckUser(world, fleet, u));
  TPUFLEET_ASSIGN_OR_RETURN(std::optional<UserRecord> old, Stored(world, fleet, u.name));
  if (old.has_value()) {
    return AlreadyExistsError(u.name + " is already a collaborator of fleet " + fleet.name +
                              "; `tpufleet users set " + u.name + "` changes it");
  }
  TPUFLEET_TRY(world.store.PutUser(u));
  return Apply(world, fleet, nullptr, &u, {}, progress);
}

Result<UsersOutcome> SetUser(World& world, const FleetSpec& fleet, const UserChange& change,
                             const UserProgress& progress) {
  TPUFLEET_TRY(CheckUserName(change.name));
  TPUFLEET_ASSIGN_OR_RETURN(std::optional<UserRecord> old, Stored(world, fleet, change.name));
  if (!old.has_value()) {
    return NotFoundError("no collaborator " + change.name + " in fleet " + fleet.name +
                         " (`tpufleet users list` shows them; `users add` adds one)");
  }
  UserRecord u = *old;
  u.keys = change.keys.value_or(u.keys);
  u.sudo = change.sudo.value_or(u.sudo);
  u.nodes = change.nodes.value_or(u.nodes);
  u.role = change.role.value_or(u.role);
  u.updated_at = world.clock.Now();
  TPUFLEET_TRY(CheckUser(world, fleet, u));
  TPUFLEET_TRY(world.store.PutUser(u));
  return Apply(world, fleet, &*old, &u, {}, progress);
}

Result<UsersOutcome> RemoveUser(World& world, const FleetSpec& fleet, const std::string& name,
                                bool purge, const UserProgress& progress) {
  TPUFLEET_TRY(CheckUserName(name));
  if (const UserSpec* s = SpecUser(fleet, name); s != nullptr) {
    return InTheSpec(fleet, *s, "remove");
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::optional<UserRecord> old, Stored(world, fleet, name));
  if (!old.has_value() && !purge) {
    return NotFoundError("no collaborator " + name + " in fleet " + fleet.name +
                         " (`tpufleet users list` shows them)");
  }
  if (old.has_value()) {
    TPUFLEET_TRY(world.store.DeleteUser(fleet.name, name));
    TPUFLEET_TRY(ForgetTokensOfNobody(world.store, name));
  }
  UsersOutcome out;
  TPUFLEET_ASSIGN_OR_RETURN(out, Apply(world, fleet, old ? &*old : nullptr, nullptr,
                                       {{name, purge}}, progress));
  if (!old.has_value()) {
    out.user.fleet = fleet.name;
    out.user.name = name;
  }
  return out;
}

}  // namespace tpufleet
