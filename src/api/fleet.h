// The wire types of the fleet commands' --json output (`up`, `up --dry-run`, `status`,
// `down`, `import`) and of the fleet's event log, and their JSON.
//
// These are plain values, what a program reading the JSON sees, field for field: no
// control or store type appears here, so the CLI today, and the server and dashboard
// later, fill them from whatever report they hold and print the same document. Each
// struct's comment names its JSON object; a field becomes the key written beside it.
// Keys are written in alphabetical order (the order `tpufleet --json` has always used).
//
// ToJson never fails and never throws: a string that is not valid UTF-8 (the cloud's
// or a worker's bytes) has its bad bytes replaced by U+FFFD.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/status.h"

namespace tpufleet::api {

/// Why something failed: {"code": "resource_exhausted", "message": "…"}.
struct Error {
  std::string code;     // StatusCodeName: "not_found", "unavailable", …
  std::string message;
};
/// nullopt for OK, else the status's code name and message.
std::optional<Error> ErrorOf(const Status& status);

/// What became of one node in up, down or import:
/// {"node", "ok", "changed", "error"?}; "ok" is true when there is no error, and
/// "error" is there only when there is one.
struct NodeOutcome {
  std::string node;
  bool changed = false;        // "changed": up created, recreated, re-keyed or set up something
  std::optional<Error> error;  // "error"
};

/// A leftover whose delete was tried: {"node", "zone", "fleet", "deleted", "error"?};
/// "deleted" is true when there is no error.
struct LeftoverOutcome {
  std::string node;
  std::string zone;
  std::string fleet;
  std::optional<Error> error;
};

/// A leftover still recorded: {"node", "zone", "fleet", "queued", "reason", "last_error"}.
struct Leftover {
  std::string node;
  std::string zone;
  std::string fleet;
  bool queued = false;     // a queued resource, not a bare node
  std::string reason;      // why it is unwanted: "stockout", …
  std::string last_error;  // why the last delete failed ("" before one was tried)
};

/// A node with a fleet's label and no record:
/// {"node", "zone", "fleet", "project", "state", "duplicates_zone"}.
struct UntrackedNode {
  std::string node;
  std::string zone;
  std::string fleet;
  std::string project;
  std::string state;
  std::string duplicates_zone;  // a record of the same name is in this zone ("" when none)
};

/// One node of `up --dry-run`: {"node", "action", "zones", "state", "detail",
/// "setup_reruns", "type", "capacity", "usd_per_hour"}.
struct PlannedNode {
  std::string node;
  std::string action;              // "keep", "create", "recreate", "wait", "foreign", …
  std::vector<std::string> zones;  // where it is, or the zones to try in order
  std::string state;               // the cloud's state when it exists
  std::string detail;              // why, for the refusals and recreate
  int setup_reruns = 0;            // workers whose setup runs again (it changed, or unknown)
  std::string type;                // "v4-32"; "" for ssh-hosts
  std::string capacity;            // "on-demand", "spot", "reserved"
  double usd_per_hour = 0;         // list price (0 when unknown)
};

/// `up --dry-run`: {"nodes", "usd_per_hour", "leftovers", "untracked"}.
struct UpPlan {
  std::vector<PlannedNode> nodes;
  double usd_per_hour = 0;  // the nodes' list prices summed
  std::vector<Leftover> leftovers;
  std::vector<UntrackedNode> untracked;
};

/// `up`: {"fleet", "nodes", "not_in_spec", "leftovers_tried", "leftovers", "untracked",
/// "ssh_config"}.
struct UpReport {
  std::string fleet;
  std::vector<NodeOutcome> nodes;          // spec order
  std::vector<std::string> not_in_spec;    // stored nodes of the fleet the spec no longer has
  std::vector<LeftoverOutcome> leftovers_tried;
  std::vector<Leftover> leftovers;         // still to delete as up ends
  std::vector<UntrackedNode> untracked;
  std::string ssh_config;                  // the SSH config file with the workers' names
};

/// `down`: {"nodes", "leftovers_tried"}.
struct DownReport {
  std::vector<NodeOutcome> nodes;
  std::vector<LeftoverOutcome> leftovers_tried;
};

/// `import`: {"nodes"}.
struct ImportReport {
  std::vector<NodeOutcome> nodes;
};

/// A worker in `status`: {"index", "address", "hostname", "setup_done"}.
struct WorkerStatus {
  int index = 0;
  std::string address;
  std::string hostname;
  bool setup_done = false;
};

/// A data disk of a node in `status`: {"disk", "source", "mode"}; mode is "read-only" or
/// "read-write".
struct DiskStatus {
  std::string disk;    // its name, what workers show as /dev/disk/by-id/google-NAME
  std::string source;  // "projects/p/zones/z/disks/NAME"
  std::string mode;
};

/// A node in `status`: {"node", "fleet", "provider", "project", "zone", "type",
/// "capacity", "state", "health", "workers", "data_disks", "age_seconds", "labels",
/// "cost_usd", "cost_is_upper_bound", "refresh_error"?, "time_to_recover_seconds"?}.
struct NodeStatus {
  std::string node;
  std::string fleet;
  std::string provider;
  std::string project;
  std::string zone;
  std::string type;
  std::string capacity;
  std::string state;     // the cloud's word, as last seen ("READY", "PREEMPTED", …), or
                         // "PREEMPTED"/"RECOVERING" when the event log knows better
  std::string health;
  std::vector<WorkerStatus> workers;
  std::vector<DiskStatus> data_disks;  // an array, [] when none
  int64_t age_seconds = 0;
  std::map<std::string, std::string> labels;  // an object: what selectors (team=a) match
  std::optional<double> cost_usd;             // null when unknown
  bool cost_is_upper_bound = false;           // spot: at most this
  std::string refresh_error;                  // written only when not empty
  std::optional<double> time_to_recover_seconds;  // its last recovery's; only when known
};

/// The serve keeping the state, in `status`: {"running", "pid"?, "host"?, "fleets"?,
/// "last_pass_seconds_ago"?}; the others only when a serve is recorded.
struct ServeStatus {
  bool running = false;
  bool recorded = false;  // a serve record exists (running, or killed without ending)
  int pid = 0;
  std::string host;
  std::vector<std::string> fleets;
  int64_t last_pass_seconds_ago = 0;
};

/// A leftover in `status`: {"node", "fleet", "zone", "queued", "type", "capacity",
/// "reason", "last_error", "age_seconds", "cost_usd", "cost_is_upper_bound"}.
struct LeftoverStatus {
  std::string node;
  std::string fleet;
  std::string zone;
  bool queued = false;
  std::string type;
  std::string capacity;
  std::string reason;
  std::string last_error;
  int64_t age_seconds = 0;
  std::optional<double> cost_usd;  // null when unknown
  bool cost_is_upper_bound = false;
};

/// `status`: {"nodes", "leftovers", "untracked", "serve"?, "states_age_seconds"?}.
struct StatusReport {
  std::vector<NodeStatus> nodes;
  std::vector<LeftoverStatus> leftovers;
  std::vector<UntrackedNode> untracked;
  std::optional<ServeStatus> serve;  // written when set
  /// How old the nodes' states are (control/fleet_status.h); written with `serve`.
  int64_t states_age_seconds = 0;
};

/// One entry of a fleet's event log (what the store keeps: create requested, ready,
/// stockout, preempted, deleted…): {"id", "time", "fleet", "node", "kind", "detail"}.
/// What `tpufleet events --json` prints, oldest first.
struct Event {
  int64_t id = 0;      // increasing
  std::string time;    // RFC 3339, UTC: "2026-01-01T00:00:00Z"
  std::string fleet;
  std::string node;
  std::string kind;    // "create-requested", "ready", "stockout", "preempted", …
  std::string detail;  // free text or key=value pairs: "zone=us-central2-b type=v4-32"
};

// The JSON documents, indented by two spaces, without a final newline.
std::string ToJson(const UpPlan& plan);
std::string ToJson(const UpReport& report);
std::string ToJson(const DownReport& report);
std::string ToJson(const ImportReport& report);
std::string ToJson(const StatusReport& report);
/// A list of events, oldest first.
std::string ToJson(const std::vector<Event>& events);

}  // namespace tpufleet::api
