// What a caller sees of the state store: the one place the rows of nodes, events and
// restartable jobs are narrowed to a caller's Access (access.h), so that the API's
// routes (server/http_api.cc) and the served commands (status, jobs, events) answer a
// member alike. With Access::Everything every function gives what the store gives.
//
// A node or job the caller may not see is left out as if it did not exist; callers that
// look one up by name say "no node X" / "no job X" for it as for an unknown name, so a
// member learns nothing of what is not theirs.
//
// Thread-safety: stateless functions over a Store (thread-safe).
#pragma once

#include <string>
#include <vector>

#include "control/access.h"
#include "core/spend_report.h"
#include "store/store.h"
#include "util/status.h"

namespace tpufleet {

/// `nodes` without those `access` may not see.
std::vector<NodeRecord> VisibleNodes(const Access& access, std::vector<NodeRecord> nodes);

/// Whether `access` may see the event `e`, given the store's `nodes`: a node's event when
/// they may see the node (a node no longer in the store is judged by its fleet and name
/// alone, so a label selector no longer selects it); a fleet's own event (no node) when
/// they are on the fleet.
bool MaySeeEvent(const Access& access, const EventRecord& e, const std::vector<NodeRecord>& nodes);

/// The events `query` selects that `access` may see, oldest first, at most query.limit
/// (the newest). For a caller who may not see everything, an admin's fleets are read
/// whole; in a fleet where they are a member or viewer, the events of each node they see
/// now are read node by node, and the fleet's own events among its newest query.limit
/// (a node gone from the store shows there only when `query` names it).
Result<std::vector<EventRecord>> VisibleEvents(Store& store, const Access& access,
                                               EventQuery query);

/// The Unix user a restartable job runs as: its spec's `user`; "" when the spec names
/// none (the login of the fleet, whoever ran it) or cannot be read.
std::string RestartableJobUser(const JobRecord& job);

/// `jobs` without those `access` may not see (Access::MaySeeJob of RestartableJobUser).
std::vector<JobRecord> VisibleJobs(const Access& access, std::vector<JobRecord> jobs);

/// Whether `access` may see `share` of the spend ledger (core/spend_report.h): an admin
/// of a fleet sees its whole ledger, anyone else on it the shares billed to them (their
/// jobs' on any node of it, and the nodes they own while no job ran).
bool MaySeeShare(const Access& access, const SpendShare& share);
/// `shares` without those `access` may not see (MaySeeShare).
std::vector<SpendShare> VisibleSpend(const Access& access, std::vector<SpendShare> shares);

/// `fleets` (their owners and budgets) without those `access` does not administer: a
/// budget left says what the whole fleet spent.
std::vector<FleetRecord> VisibleFleets(const Access& access, std::vector<FleetRecord> fleets);

/// Whether `access` may see what spans fleets (serve's /metrics, the audit log): the
/// operator and the local user, or a person who is an admin of every fleet the store
/// knows (those of its nodes and of its users table), and of at least one.
Result<bool> MaySeeAllFleets(Store& store, const Access& access);

}  // namespace tpufleet
