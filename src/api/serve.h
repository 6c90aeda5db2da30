// The wire types of `tpufleet serve`'s HTTP API (server/http_api.h, docs/serve.md):
// GET /v1/status and GET /v1/jobs. GET /v1/events answers with the event list of
// api/fleet.h (ToJson of std::vector<Event>), the document `tpufleet events --json`
// prints.
//
// Plain values, what a program reading the JSON sees, field for field; each struct's
// comment names its JSON object. Keys are written in alphabetical order, as every
// tpufleet document.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/fleet.h"

namespace tpufleet::api {

/// A node serve keeps: {"node", "fleet", "zone", "type", "capacity", "state",
/// "age_seconds", "last_recover_seconds"}.
struct ServeNode {
  std::string node;
  std::string fleet;
  std::string zone;
  std::string type;      // "v4-32"
  std::string capacity;  // "on-demand", "spot", "reserved"
  std::string state;     // as the store last recorded it: "READY", "PREEMPTED", …
  int64_t age_seconds = 0;
  /// Seconds of its last recovery (preempted → recovered); null before one.
  std::optional<double> last_recover_seconds;
};

/// The serve process: {"pid", "host", "fleets", "started", "last_pass",
/// "last_pass_seconds_ago", "passes", "api_calls", "preemptions", "recoveries"}.
struct ServeProcess {
  int pid = 0;
  std::string host;
  std::vector<std::string> fleets;  // the fleet names it keeps
  std::string started;              // RFC 3339, UTC
  std::string last_pass;            // RFC 3339, UTC; "" before the first pass
  std::optional<double> last_pass_seconds_ago;  // null before the first pass
  int64_t passes = 0;
  int64_t api_calls = 0;    // calls to the providers' APIs since start
  int64_t preemptions = 0;  // since start
  int64_t recoveries = 0;   // since start
};

/// GET /v1/status: {"serve", "nodes", "warnings"}.
struct ServeStatus {
  ServeProcess serve;
  std::vector<ServeNode> nodes;       // by fleet, then name
  std::vector<std::string> warnings;  // what the last pass could not do, one line each
};

/// A job serve restarts when its node is lost or it fails: {"id", "name", "fleet",
/// "node", "restart", "max_restarts", "restarts", "state", "last_reason", "created",
/// "updated"}.
struct RestartableJob {
  std::string id;
  std::string name;
  std::string fleet;
  std::string node;
  std::string restart;      // "on-preemption" | "on-failure"
  int max_restarts = 0;
  int restarts = 0;         // made so far
  std::string state;        // "active" | "done" | "gave-up"
  std::string last_reason;  // why the last restart: "preempted", "failed (exit 1)"
  std::string created;      // RFC 3339, UTC
  std::string updated;      // RFC 3339, UTC
};

// The JSON documents, indented by two spaces, without a final newline.
std::string ToJson(const ServeStatus& status);
/// An error answer of the API: {"error": {"code", "message"}}.
std::string ToJson(const Error& error);
/// GET /v1/jobs: {"jobs": […]}.
std::string ToJson(const std::vector<RestartableJob>& jobs);

}  // namespace tpufleet::api
