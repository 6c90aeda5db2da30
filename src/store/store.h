// Store: tpufleet's local state, what `status` answers from and what lets a killed
// `up` converge when run again.
//
// It holds, per fleet, the nodes tpufleet has asked the cloud for (the zone and request
// id of the create in flight, the cloud's last known view of the node, and its workers:
// addresses, pinned host keys, whether setup ran and which version of it); the
// leftovers, resources a failed or superseded create left in some zone that are still
// to be deleted; an append-only event log (create requested, created, ready,
// stockout, preempted, deleted…) with times; the jobs `run --restart` asked serve to keep
// going; the spend ledger (each node's billable stretches with their price and the person they
// are billed to); each fleet's owner and budget as last applied; and the
// serve process keeping the state, if any. Recent stockouts, the age of a node and
// time-to-recover are derived from the events; nothing is stored twice.
//
// A node's request id is made when up first asks for it in a zone and is sent again
// when a later up retries that create in the same zone (the record still says
// REQUESTED or QUEUED there), so the API, which remembers request ids for an hour,
// answers with the first request's operation instead of making a second node. A create
// in another zone gets a fresh id.
//
// Every write is atomic; Transaction() makes several writes one atomic step, so a
// process killed at any point leaves the state before or after a step, never between.
// The records are core's plain values (core/node_record.h). SqlStore (sql_store.h) is the
// real implementation, on SQLite (sqlite_store.h, one person's file) or PostgreSQL
// (postgres_store.h, a lab's shared server); the SQL never leaves it, and a state is
// stored as its wire name (NodeState::Name) and parsed when read.
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

#include "core/node_record.h"
#include "util/clock.h"
#include "util/status.h"

namespace tpufleet {

/// Something that happened to a node, for `status`, recovery times and zone choice.
struct EventRecord {
  int64_t id = 0;               // set by the store, increasing
  Clock::WallTime time{};
  std::string fleet;
  std::string node;
  std::string kind;             // "create-requested", "ready", "stockout", "preempted", …
  std::string detail;           // free text or key=value pairs, e.g. "zone=us-central2-b"
};
// Besides up's and down's (create-requested, ready, stockout, leftover, deleted…), the
// kinds serve writes, with their detail keys: preempted (signal=
// api|agents|vanished workers=N), maintenance (signal=), unreachable / reachable
// (worker=N), detected (reason=), delete-requested (reason=husk|ttl|idle|budget),
// deleted, create-requested, ready, agent-up, setup-done, job-resumed (job=ID
// restarts=N), job-gave-up, ttl-warned, idle (since=), stopped, budget-reached
// (usd_day= usd_total=), recovered (seconds=S: the time-to-recover, from the preemption
// to the last job resumed or setup done).

/// Which events to read back.
struct EventQuery {
  std::string fleet;            // "" = every fleet
  std::string node;             // "" = every node
  std::string kind;             // "" = every kind
  std::optional<Clock::WallTime> since;  // only events at or after
  size_t limit = 1000;          // the newest `limit` matches, oldest first
  bool fleet_only = false;      // only the fleets' own events (those of no node)
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
  /// Every restartable job of `fleet` ("" = all fleets), ordered by fleet, node, id.
  virtual Result<std::vector<JobRecord>> Jobs(std::string_view fleet) = 0;
  /// Inserts or replaces the job (fleet, node, id).
  virtual Status PutJob(const JobRecord& job) = 0;
  /// The spend stretches of `fleet` ("" = all fleets) that end at or after `since` or are
  /// still open (every stretch when `since` is nullopt), ordered by start then id.
  virtual Result<std::vector<SpendRecord>> Spend(std::string_view fleet,
                                                 std::optional<Clock::WallTime> since) = 0;
  /// Inserts the stretch when `s.id` is 0, else updates the stretch with that id
  /// (NotFound when there is none); returns its id.
  virtual Result<int64_t> PutSpend(const SpendRecord& s) = 0;
  /// The job runs of `fleet` ("" = all fleets) that end at or after `since` or are
  /// still open (every run when `since` is nullopt), ordered by start, fleet, node, id.
  virtual Result<std::vector<JobRunRecord>> JobRuns(std::string_view fleet,
                                                    std::optional<Clock::WallTime> since) = 0;
  /// Inserts or replaces the run (fleet, node, id).
  virtual Status PutJobRun(const JobRunRecord& run) = 0;
  /// The usage rows of `fleet` ("" = all fleets) whose hour ends after `since` (every
  /// row when nullopt), ordered by hour, fleet, node, job.
  virtual Result<std::vector<UsageRecord>> Usage(std::string_view fleet,
                                                 std::optional<Clock::WallTime> since) = 0;
  /// Adds `u`'s seconds to the row (fleet, node, hour, job), made when missing; its
  /// measured_until becomes the later of the two.
  virtual Status AddUsage(const UsageRecord& u) = 0;
  /// Every fleet as last applied (`up`, serve), ordered by name.
  virtual Result<std::vector<FleetRecord>> Fleets() = 0;
  /// Inserts or replaces the fleet `fleet.name`.
  virtual Status PutFleet(const FleetRecord& fleet) = 0;
  /// The serve process recorded for this state, nullopt when none is.
  virtual Result<std::optional<ServeRecord>> Serve() = 0;
  /// Records `s` as the serve process, replacing any other.
  virtual Status PutServe(const ServeRecord& s) = 0;
  /// Forgets the serve record when its pid is `pid` (a serve ending cleanly); OK and
  /// nothing changed otherwise (another serve has taken over since).
  virtual Status ClearServe(int pid) = 0;
  /// Every collaborator of `fleet` ("" = all fleets), ordered by fleet then name.
  virtual Result<std::vector<UserRecord>> Users(std::string_view fleet) = 0;
  /// Inserts or replaces the user (fleet, name).
  virtual Status PutUser(const UserRecord& user) = 0;
  /// Forgets the user (fleet, name). OK when it does not exist.
  virtual Status DeleteUser(std::string_view fleet, std::string_view name) = 0;
  /// Keeps a person's token (its SHA-256), replacing one with the same hash.
  virtual Status PutToken(const TokenRecord& token) = 0;
  /// The token whose SHA-256 is `sha256`; nullopt when none is kept.
  virtual Result<std::optional<TokenRecord>> FindToken(std::string_view sha256) = 0;
  /// Forgets every token of `person` (a collaborator removed, or re-invited).
  virtual Status DeleteTokens(std::string_view person) = 0;
  /// Appends a line to the audit log; `record.id` is ignored.
  virtual Status AddAudit(const AuditRecord& record) = 0;
  /// The newest `limit` audit lines at or after `since` (all when nullopt), oldest first.
  virtual Result<std::vector<AuditRecord>> Audit(std::optional<Clock::WallTime> since,
                                                 int64_t limit) = 0;
  /// Runs `body` as one atomic, serializable step: its writes all happen, or none if it
  /// returns an error (or the process dies). Bodies may call the other methods, not
  /// Transaction. A body may run more than once (PostgreSQL runs a step that lost a
  /// conflict with another process's again), so it must do nothing but its store calls
  /// and what it computes from them.
  virtual Status Transaction(const std::function<Status()>& body) = 0;
};

}  // namespace tpufleet
