// Store: tpufleet's local state, what `status` answers from and what lets a killed
// `up` converge when run again.
//
// It holds, per fleet, the nodes tpufleet has asked the cloud for (the zone and request
// id of the create in flight, the cloud's last known view of the node, and its workers:
// addresses, pinned host keys, whether setup ran); the leftovers, resources a failed or
// superseded create left in some zone that are still to be deleted; and an append-only
// event log (create requested, created, ready, stockout, preempted, deleted…) with
// times. Recent stockouts, the age of a node and time-to-recover are derived from the
// events; nothing is stored twice.
//
// A node's request id is made when up first asks for it in a zone and is sent again
// when a later up retries that create in the same zone (the record still says
// REQUESTED or QUEUED there), so the API, which remembers request ids for an hour,
// answers with the first request's operation instead of making a second node. A create
// in another zone gets a fresh id.
//
// Every write is atomic; Transaction() makes several writes one atomic step, so a
// process killed at any point leaves the state before or after a step, never between.
// SqliteStore (sqlite_store.h) is the real implementation; the SQL never leaves it.
//
// Thread-safety: implementations are safe to call from several threads; a Transaction
// body runs with the store locked to its thread.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/clock.h"
#include "util/status.h"

namespace tpufleet {

/// One worker VM of a node, as last seen.
struct WorkerRecord {
  int index = 0;
  std::string address;    // what SSH connects to
  std::string hostname;   // the VM's own name ("t1v-n-…-w-0")
  std::string host_key;   // pinned "ssh-ed25519 AAAA…", from the node's guest attributes
  bool setup_done = false;  // tpufleet logged in here and the spec's setup (if any) exited 0
};

/// One node of a fleet: what tpufleet asked for and what the cloud last said.
struct NodeRecord {
  std::string fleet;            // the spec's `fleet`
  std::string name;             // node id in the cloud: "trainer", "eval-1"
  std::string provider;         // "gcp-tpu", "ssh-hosts"
  std::string project;
  std::string zone;             // the zone the node was created in ("" until chosen)
  std::string type;             // "v4-32"
  std::string runtime_version;
  std::string capacity;         // "on-demand", "spot", "reserved"
  std::string queued_resource;  // full name of its queued resource, if queued
  std::string cloud_name;       // "projects/p/locations/z/nodes/n" once requested
  std::string request_id;       // sent with the create; a retry in `zone` reuses it
  std::string state;            // last seen cloud state ("CREATING", "READY", …)
  std::string health;           // last seen health ("HEALTHY", "UNHEALTHY_MAINTENANCE", "")
  std::string spec_hash;        // digest of the node's spec when it was created
  std::string login;            // the SSH user tpufleet logs in as ("" leaves it to ssh)
  int port = 0;                 // SSH port of its workers; 0 = 22
  std::map<std::string, std::string> labels;  // the spec's labels (GCP labels) when last
                                              // created/adopted; what targets select by
  Clock::WallTime created_at{};  // when tpufleet first asked for it
  Clock::WallTime updated_at{};  // when this record last changed
  std::vector<WorkerRecord> workers;
};

/// A cloud resource tpufleet made and no longer wants, still to be deleted: what a
/// create that failed (a stockout that left its node behind) or was superseded left in
/// some zone. It bills and holds quota (and the node's id in that zone) until the cloud
/// lets it go, so it is never forgotten: `up` and `down` retry the delete before
/// anything else and `status` shows it.
struct LeftoverRecord {
  std::string fleet;
  std::string name;         // the node's (or queued resource's) id in the cloud
  std::string zone;
  bool queued = false;      // a queued resource, deleted with its node (force)
  std::string provider;     // as in NodeRecord, to find the provider
  std::string project;
  std::string type;         // "v4-32"; with capacity, what `status` prices it by
  std::string capacity;
  std::string reason;       // why it is unwanted: "stockout", …
  std::string last_error;   // why the last delete failed ("" before one was tried)
  Clock::WallTime since{};  // when tpufleet asked for it: what it has cost since
};

/// Something that happened to a node, for `status`, recovery times and zone choice.
struct EventRecord {
  int64_t id = 0;               // set by the store, increasing
  Clock::WallTime time{};
  std::string fleet;
  std::string node;
  std::string kind;             // "create-requested", "ready", "stockout", "preempted", …
  std::string detail;           // free text or key=value pairs, e.g. "zone=us-central2-b"
};

/// Which events to read back.
struct EventQuery {
  std::string fleet;            // "" = every fleet
  std::string node;             // "" = every node
  std::string kind;             // "" = every kind
  std::optional<Clock::WallTime> since;  // only events at or after
  size_t limit = 1000;          // the newest `limit` matches, oldest first
};

class Store {
 public:
  Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  virtual ~Store() = default;

  /// Every node of `fleet` ("" = all fleets), ordered by fleet then name.
  virtual Result<std::vector<NodeRecord>> Nodes(std::string_view fleet) = 0;
  /// Inserts or replaces the node (fleet, name), workers included.
  virtual Status PutNode(const NodeRecord& node) = 0;
  /// Removes the node and its workers. OK when it does not exist.
  virtual Status DeleteNode(std::string_view fleet, std::string_view name) = 0;
  /// Every leftover of `fleet` ("" = all fleets), ordered by fleet, name, zone.
  virtual Result<std::vector<LeftoverRecord>> Leftovers(std::string_view fleet) = 0;
  /// Inserts or replaces the leftover (fleet, name, zone, queued).
  virtual Status PutLeftover(const LeftoverRecord& leftover) = 0;
  /// Forgets the leftover (fleet, name, zone, queued), once the cloud has let it go. OK
  /// when it does not exist.
  virtual Status DeleteLeftover(const LeftoverRecord& leftover) = 0;
  /// Appends an event; `event.id` is ignored.
  virtual Status AddEvent(const EventRecord& event) = 0;
  virtual Result<std::vector<EventRecord>> Events(const EventQuery& query) = 0;
  /// Runs `body` as one atomic step: its writes all happen, or none if it returns an
  /// error (or the process dies). Bodies may call the other methods, not Transaction.
  virtual Status Transaction(const std::function<Status()>& body) = 0;
};

}  // namespace tpufleet
