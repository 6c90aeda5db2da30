#include "control/node_accounts.h"

#include <algorithm>

#include "control/agent_install.h"
#include "control/node_history.h"
#include "control/users.h"
#include "core/up_plan.h"

namespace tpufleet {
namespace {

// The node's newest `limit` events of `kind`, oldest first.
Result<std::vector<EventRecord>> EventsOf(Store& store, const std::string& fleet,
                                          const std::string& node, const char* kind,
                                          size_t limit) {
  EventQuery q;
  q.fleet = fleet;
  q.node = node;
  q.kind = kind;
  q.limit = limit;
  return store.Events(q);
}

}  // namespace

std::string AccountsDigest(const std::vector<UserSpec>& users) {
  return SetupDigest(AccountsRequestLine(users));  // the digest of a text, as a setup's
}

Result<NodeAccounts> NodeAccountsToApply(Store& store, const FleetSpec& fleet,
                                         const NodeSpec& spec, const std::string& node) {
  NodeAccounts out;
  TPUFLEET_ASSIGN_OR_RETURN(out.users, UsersOfNode(store, fleet, spec, node));
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<EventRecord> applied,
                            EventsOf(store, fleet.name, node, kAccountsAppliedEvent, 1));
  int64_t after = applied.empty() ? 0 : applied.back().id;
  // A node never applied counts as having the empty list: a fleet without users costs
  // no round trip.
  std::string digest =
      applied.empty() ? AccountsDigest({})
                      : DetailValue(applied.back().detail, "digest").value_or("");
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<EventRecord> pending,
                            EventsOf(store, fleet.name, node, kRemovalPendingEvent, 1000));
  for (const EventRecord& e : pending) {
    std::string name = DetailValue(e.detail, "user").value_or("");
    if (e.id <= after || name.empty() ||
        std::any_of(out.users.begin(), out.users.end(),
                    [&](const UserSpec& u) { return u.name == name; })) {
      continue;
    }
    bool purge = DetailValue(e.detail, "purge").value_or("0") == "1";
    auto same = std::find_if(out.remove.begin(), out.remove.end(),
                             [&](const api::AccountRemoval& r) { return r.name == name; });
    if (same == out.remove.end()) {
      out.remove.push_back({name, purge});
    } else {
      same->purge = same->purge || purge;
    }
  }
  out.applied = out.remove.empty() && digest == AccountsDigest(out.users);
  return out;
}

Status RecordAccountsApplied(Store& store, const Clock& clock, const std::string& fleet,
                             const std::string& node, const std::vector<UserSpec>& users) {
  return store.AddEvent({0, clock.Now(), fleet, node, kAccountsAppliedEvent,
                         "users=" + std::to_string(users.size()) +
                             " digest=" + AccountsDigest(users)});
}

Status RecordRemovalsPending(Store& store, const Clock& clock, const std::string& fleet,
                             const std::string& node,
                             const std::vector<api::AccountRemoval>& remove) {
  for (const api::AccountRemoval& r : remove) {
    TPUFLEET_TRY(store.AddEvent({0, clock.Now(), fleet, node, kRemovalPendingEvent,
                                 "user=" + r.name + " purge=" + (r.purge ? "1" : "0")}));
  }
  return Status::Ok();
}

}  // namespace tpufleet
