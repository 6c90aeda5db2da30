// The up plan: what `up` (and `up --dry-run`) decides for each node id of a spec, as a
// pure function of plain values: the spec, the store's records and leftovers, what the
// cloud showed, the recent stockouts, and now. control/up_plan.cc gathers those (reads
// the store, lists the cloud once, reads the events) and calls PlanNodes.
//
// For each node id, in spec order:
//   - a record of the same name in another fleet: refuse (names are SSH aliases);
//   - a node of that name in the cloud (its recorded zone first, else any zone of its
//     spec; never one in a zone holding a leftover of it) is kept when ready, waited for
//     when coming up, recreated when gone (preempted, terminated), refused when another
//     fleet or tool made it (kForeign), or when its record says it was made from a
//     different type, capacity, runtime or disks (kDiffers: remaking loses its boot disk);
//   - else its queued resource: waited for, or recreated when it failed or was suspended;
//   - else, for ssh-hosts, kept (listed in the spec, so it exists);
//   - else created: the spec's zones with recent stockouts of its type last
//     (zone_choice.h), the zone of a create still in flight first (resume: the same
//     request id is sent again), and never a zone that holds a leftover of it.
// A kept or waited-for node whose workers ran another version of the spec's setup
// script (or one tpufleet did not record) says how many workers run it again.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/catalog.h"
#include "core/fleet_spec.h"
#include "core/node_record.h"
#include "core/node_state.h"
#include "core/zone_choice.h"
#include "util/clock.h"

namespace tpufleet {

enum class PlanAction {
  kKeep,      // exists, belongs to the fleet
  kCreate,    // does not exist: create in the first of `zones`
  kRecreate,  // preempted or terminated: delete, then create
  kWait,      // being created (or queued) already: wait for it
  kForeign,   // exists but was not made by this fleet: refuse
  kDiffers,   // ours, but made from a different type, capacity or runtime: refuse to remake
  kStart,     // stopped (by serve's idle action, or by hand): start it, keeping its disk
};

/// "keep", "create", "recreate", "wait", "refuse", "differs", "start".
std::string_view PlanActionName(PlanAction action);

/// What up would do to one node id (what --dry-run prints).
struct NodePlan {
  std::string node;
  const NodeSpec* spec = nullptr;  // points into the FleetSpec given to PlanNodes
  PlanAction action = PlanAction::kCreate;
  std::vector<std::string> zones;  // where it is (keep/wait) or the order to try (create)
  NodeState state;                 // the cloud's state when it exists
  std::string detail;              // why, for kForeign, kDiffers and kRecreate; setup reruns
  double usd_per_hour = 0;         // list price of the node (0 when unknown or ssh-hosts)
  /// kCreate: a create was requested in zones.front() and its outcome is unknown (the
  /// record says REQUESTED or QUEUED there): send it again with the recorded request id.
  bool resume = false;
  /// The cloud lists a node of this name in zones.front(): tracked, never untracked.
  bool exists = false;
  /// Workers whose setup ran another version of the spec's setup (or one not recorded):
  /// up runs the spec's setup there again.
  int setup_reruns = 0;
};

/// One node (or queued resource) the cloud listed, as the plan needs it.
struct CloudSighting {
  std::string id;
  std::string zone;
  NodeState state;
  std::string fleet_label;  // the value of its fleet label, "" when it has none
};

/// The zones to list for the plan: every zone of the fleet's nodes, and those its
/// records name (a zone the spec dropped may still hold a node, which must be found,
/// not made again). `queued`: the same for queued resources.
struct ZonesToList {
  std::vector<std::string> nodes;
  std::vector<std::string> queued;
};
ZonesToList PlanZones(const FleetSpec& fleet, const std::vector<NodeRecord>& records);

/// Everything PlanNodes looks at besides the spec and the catalog.
struct PlanInputs {
  std::vector<NodeRecord> records;        // every record in the store, of every fleet
  std::vector<LeftoverRecord> leftovers;  // the fleet's recorded leftovers
  std::vector<CloudSighting> nodes;       // the nodes listed in PlanZones().nodes
  std::vector<CloudSighting> queued;      // the queued resources in PlanZones().queued
  std::vector<Stockout> stockouts;        // the recent stockouts (the store's events)
  Clock::WallTime now{};
};

/// One NodePlan per node id of the spec, in spec order, as described above.
std::vector<NodePlan> PlanNodes(const FleetSpec& fleet, const Catalog& catalog,
                                const PlanInputs& in);

/// The digest of what a node is made of; a change means the node no longer matches.
/// (Its setup script is not part of it: a new setup runs again, the node stays.)
std::string SpecDigest(const NodeSpec& node);

/// The digest of a setup script, recorded per worker once it exited 0 there. Never "".
std::string SetupDigest(std::string_view setup);

/// The worker must (again) be logged in to and run the spec's `setup`: it never did,
/// or it ran another version of a non-empty setup, or one whose version is unknown.
bool NeedsSetup(const WorkerRecord& worker, std::string_view setup);

/// `zones` without those that hold a leftover of node `name`.
std::vector<std::string> WithoutLeftovers(const std::vector<std::string>& zones,
                                          const std::string& name,
                                          const std::vector<LeftoverRecord>& leftovers);

}  // namespace tpufleet
