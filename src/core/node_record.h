// The records tpufleet keeps of its nodes and of the leftovers its creates left
// behind, of the jobs serve keeps going, of what the nodes cost, of the serve process
// itself, of the collaborators `tpufleet users` added and of the jobs' runs: plain values,
// written and read by the store (store/store.h), planned over by core (core/up_plan.h,
// core/reconcile.h, core/ledger.h) and shown by status, jobs and cost.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/node_state.h"
#include "util/clock.h"

namespace tpufleet {

/// One worker VM of a node, as last seen.
struct WorkerRecord {
  int index = 0;
  std::string address;    // what SSH connects to
  std::string hostname;   // the VM's own name ("t1v-n-…-w-0")
  std::string host_key;   // pinned "ssh-ed25519 AAAA…", from the node's guest attributes
  bool setup_done = false;  // tpufleet logged in here and the spec's setup (if any) exited 0
  /// SetupDigest (core/up_plan.h) of the setup script that exited 0 here; "" when the
  /// store does not know which (a worker set up before tpufleet recorded it).
  std::string setup_digest;
  /// SHA-256 of the tpufleet-agent binary `up` last found installed and answering here
  /// (control/agent_install.h); "" when not known (up checks again), "-" when up may not
  /// install it (an ssh-hosts login without passwordless sudo).
  std::string agent_sha256{};
  /// The worker's address inside its network (the API's networkEndpoints[].ipAddress),
  /// what the node's workers reach each other at: a job's coordinator and worker list
  /// (core/job.h). "" when not known (ssh-hosts, or a record from before it was kept):
  /// then `address` is used.
  std::string internal_address{};
};

/// A persistent disk attached to a node (the TPU API's AttachedDisk), as the cloud last
/// said: what an imported node brought, or what the spec's data_disks attached.
struct NodeDisk {
  std::string source;  // "projects/p/zones/z/disks/d"
  std::string mode;    // "read-only" or "read-write" (core's DiskModeName)

  /// d: the disk's own name, the last part of `source`, what a worker shows as google-d.
  std::string Name() const { return source.substr(source.rfind('/') + 1); }
  friend bool operator==(const NodeDisk&, const NodeDisk&) = default;
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
  NodeState state;              // last seen state (the cloud's, or tpufleet's own)
  std::string health;           // last seen health ("HEALTHY", "UNHEALTHY_MAINTENANCE", "")
  std::string spec_hash;        // digest of the node's spec when it was created
  std::string login;            // the SSH user tpufleet logs in as ("" leaves it to ssh)
  int port = 0;                 // SSH port of its workers; 0 = 22
  std::map<std::string, std::string> labels;  // the spec's labels (GCP labels) when last
                                              // created/adopted; what targets select by
  std::vector<NodeDisk> data_disks;  // as last seen; a refresh takes the cloud's
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

/// A job `run --restart` asked serve to keep going (store: jobs table, one row per
/// (fleet, node, id)). A job run without --restart is not stored: its agent keeps it.
struct JobRecord {
  std::string fleet, node, id, name;
  /// api::JobSpec as `run` sent it to worker 0 (its ToJson), without topology and worker,
  /// which the restart fills from the node's workers of the time (a recreated node has
  /// new addresses).
  std::string spec_json;
  std::string restart;        // "on-preemption" | "on-failure"
  int max_restarts = 10;      // the restarts allowed; at the limit the job gives up
  int restarts = 0;           // restarts made so far (the job sees it as TPUFLEET_RESTARTS)
  std::string state;          // "active" (serve watches it) | "done" (succeeded or
                              // cancelled) | "gave-up" (max_restarts reached)
  std::string last_reason;    // why the last restart: "preempted", "failed (exit 1)", …
  Clock::WallTime created_at{}, updated_at{};
};

/// One billable stretch of one node incarnation in one state (store: spend table): the
/// ledger serve keeps across recreates, what budgets are checked against.
struct SpendRecord {
  int64_t id = 0;             // set by the store (PutSpend with id 0 inserts)
  std::string fleet, node, cloud_name, zone, type, capacity;
  std::string state;          // the billable state this stretch was in ("READY", "PREEMPTED", …)
  double usd_per_hour = 0;    // priced when opened (core/ledger.h PriceFor)
  Clock::WallTime start{};
  std::optional<Clock::WallTime> end;  // nullopt: still open
  /// The person the stretch is billed to: the fleet's owner when it opened
  /// (FleetRecord::owner); "" for stretches opened before owners were kept.
  std::string owner{};
};

/// One run of a job on a node (store: job_runs, one row per (fleet, node, id)): the node's
/// billed hours while it ran are shared among the runs of the time and billed to their
/// people (core/spend_report.h). Written by `run` when the job started; ended when the
/// agents say it ended (`jobs`, serve's jobs round). A job restarted after a preemption
/// keeps its id and so its run: the time it was down counts to it.
struct JobRunRecord {
  std::string fleet, node, id, name;
  /// Who ran it, when it is billed to them: a team server's collaborator. "" for a run
  /// of the local user or of the server's operator, billed as the node is, to the
  /// fleet's owner (the spec's owner, or who applied it).
  std::string person;
  std::string user;  // the Unix account it runs as on the workers ("" = tpufleet's login)
  Clock::WallTime start{};
  std::optional<Clock::WallTime> end;  // nullopt: not seen ended yet
};

/// What serve's metrics rounds measured of one node in one UTC hour while `job` held its
/// chips ("" while none did), added up (store: node_usage, one row per (fleet, node,
/// hour, job)); core/goodput.h makes and reads them.
struct UsageRecord {
  std::string fleet, node, job;
  Clock::WallTime hour{};          // the UTC hour's start
  double seconds = 0;              // of the hour measured
  double busy_seconds = 0;         // of those, weighted by the TPUs' duty cycle
  double input_bound_seconds = 0;  // the TPUs starved by the input pipeline
  double idle_seconds = 0;         // nothing used the node
  /// The end of the last measure added: serve, restarted, measures from there on.
  Clock::WallTime measured_until{};
};

/// A fleet as its spec was last applied (store: fleets table, one row per name), written
/// by `up` and by serve: who the fleet's node-hours are billed to and its budget, so
/// that `cost` can answer from the store alone, whoever asks and wherever.
struct FleetRecord {
  std::string name;
  /// The spec's `owner`, else the person who applied it (the local login, or a team
  /// server's caller).
  std::string owner;
  std::optional<double> usd_per_day;  // the spec's budget, if any
  std::optional<double> usd_total;
  Clock::WallTime updated_at{};
};

/// The serve process keeping this state (store: at most one row), written at its start
/// and after every pass, so `status` can say whether it runs and how fresh its view is.
struct ServeRecord {
  int pid = 0;
  std::string host;                 // the machine's hostname (a pid means nothing elsewhere)
  std::vector<std::string> fleets;  // the fleets it keeps
  Clock::WallTime started_at{}, last_pass_at{};
};

/// A collaborator `tpufleet users add` gave an account (store: users table, one row per
/// (fleet, name)): besides the spec's users, on every worker of the nodes `nodes`
/// selects, now and after every recreate (control/users.h UsersOfNode). The spec's users
/// are never stored here: a name the spec has is refused.
struct UserRecord {
  std::string fleet;
  std::string name;               // Unix login, checked by core's CheckUserName
  std::vector<std::string> keys;  // OpenSSH public key lines (CheckSshPublicKey), at least one
  bool sudo = false;              // passwordless sudo; without it none at all
  /// Node selector words (control/targets.h: "NODE", "key=value[,key=value]", "all"), a
  /// node chosen when any word selects it; empty: every node of the fleet.
  std::vector<std::string> nodes;
  std::string role = "member";    // "admin" | "member" | "viewer", for the team server
  Clock::WallTime created_at{}, updated_at{};
};

/// A team server's per-person token (store: tokens table): whoever presents the token
/// is `person`, with the roles that person's UserRecords give (control/access.h). Only
/// the token's SHA-256 is kept: a copy of the store gives no one a way in.
struct TokenRecord {
  std::string sha256;  // hex of the token's SHA-256, the key
  std::string person;  // a collaborator's name (the users table's `name`)
  std::string label;   // why it was made ("invite"), shown to admins
  Clock::WallTime created_at{};
};

/// One line of the team server's audit log (store: audit table): who did what through
/// it, and how that ended, kept however the request ended (refused ones too).
struct AuditRecord {
  int64_t id = 0;       // set by the store, increasing
  Clock::WallTime time{};
  std::string person;   // "operator" (serve's own token) or a collaborator's name
  std::string action;   // what was asked: "status --json", "GET /v1/jobs"
  std::string outcome;  // "ok", "exit 1", "refused: why"
};

}  // namespace tpufleet
