// The wire types of `tpufleet emulator …`'s --json output and of the emulator's admin
// API (/emulator/v1/status and /emulator/v1/faults), and their JSON.
//
// The emulator's daemon renders its status and faults from these types, and the CLI
// reads them back with ParseEmulatorStatus, adds what it knows of the daemon and
// prints them: one type on both sides of the admin API. Plain values, as in
// api/fleet.h; each struct's comment names its JSON object. The admin API's keys are
// camelCase like the Cloud TPU API's; the daemon's are snake_case like tpufleet's.
// Keys are written in alphabetical order. A field whose comment says "written only
// when set" is left out when empty, false or nullopt. ToJson never throws.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace tpufleet::api {

/// Where an emulator's daemon is: {"endpoint", "pid", "running": true, "state_dir",
/// "token_file"} when one runs, {"running": false, "state_dir"} when none does (what
/// `emulator start --json` and `emulator status --json` print of it).
struct EmulatorDaemon {
  bool running = false;
  std::string state_dir;
  // When running:
  int pid = 0;
  std::string endpoint;    // "http://127.0.0.1:PORT/"
  std::string token_file;  // the bearer token every call needs
};

/// `emulator stop --json`: {"state_dir", "stopped"}; stopped: a daemon was running.
struct EmulatorStopped {
  bool stopped = false;
  std::string state_dir;
};

/// A fault (emulator/faults.h): {"id", "kind", "createTime"} and, written only when
/// set, {"zone", "region", "family", "node", "worker" (cutoff, device), "device"
/// (device), "rate", "httpCodes", "seed" (storm), "factor" (slow), "duration",
/// "endTime", "notice"}.
struct EmulatorFault {
  std::string id;           // "f1"
  std::string kind;         // "stockout", "quota", "storm", …
  std::string create_time;  // RFC 3339
  std::string zone;
  std::string region;
  std::string family;
  std::string node;  // the node's full name
  std::optional<int> worker;
  std::optional<int> device;  // the chip a device fault takes away
  struct Storm {
    double rate = 0;
    std::vector<int> http_codes;
    uint64_t seed = 0;
  };
  std::optional<Storm> storm;
  std::optional<double> factor;
  std::optional<std::string> duration;  // "30s", "1.5s"
  std::optional<std::string> end_time;
  std::optional<std::string> notice;
};

/// One worker of an emulated node: {"index", "address", "hostname", "hostKey", "cutOff",
/// "devices"}.
struct EmulatorWorker {
  int index = 0;
  std::string address;
  std::string hostname;
  std::string host_key;  // "ssh-ed25519 AAAA…"
  bool cut_off = false;
  int devices = 0;  // chips it shows: the type's chips per worker less those device faults took
};

/// An emulated node: {"name", "state", "acceleratorType", "chips", "spot", "workers"}
/// and, written only when set, {"health", "queuedResource", "operation",
/// "preemptionPending", "maintenance"}.
struct EmulatorNode {
  std::string name;   // projects/p/locations/z/nodes/n
  std::string state;  // Node.State's wire name: NodeState::Name()
  std::string accelerator_type;
  int chips = 0;
  bool spot = false;
  std::vector<EmulatorWorker> workers;
  std::string health;           // "HEALTHY", "UNHEALTHY_MAINTENANCE"
  std::string queued_resource;  // the queued resource that made it
  std::string operation;        // the operation under way on it
  bool preemption_pending = false;
  std::string maintenance;  // "PENDING" or "ONGOING"
};

/// A queued resource: {"name", "state", "nodes"} (the nodes it makes, by full name).
struct EmulatorQueuedResource {
  std::string name;
  std::string state;  // QueuedResourceState's wire name
  std::vector<std::string> nodes;
};

/// Chips in use against a limit: {"zone", "family", "chipsInUse", "chipsLimit"} for
/// capacity, {"region", "family", "tier", "chipsInUse", "chipsLimit"} for quota.
struct EmulatorUsage {
  std::string zone;    // capacity only
  std::string region;  // quota only
  std::string tier;    // quota only: "any", "spot", "on_demand"
  std::string family;
  long long chips_in_use = 0;
  long long chips_limit = 0;
};

/// GET /emulator/v1/status: {"now", "nodes", "queuedResources", "faults", "usage":
/// {"capacity", "quota"}, "operations": {"total", "pending"}, "hostWorkPending"}, and
/// `emulator status --json` prints it with EmulatorDaemon's keys added.
struct EmulatorStatus {
  std::string now;  // the emulator's clock, RFC 3339
  std::vector<EmulatorNode> nodes;
  std::vector<EmulatorQueuedResource> queued_resources;
  std::vector<EmulatorFault> faults;
  std::vector<EmulatorUsage> capacity;
  std::vector<EmulatorUsage> quota;
  long long operations_total = 0;
  long long operations_pending = 0;
  long long host_work_pending = 0;
  std::optional<EmulatorDaemon> daemon;  // written only when set: its keys at the top level
};

std::string ToJson(const EmulatorDaemon& daemon);
std::string ToJson(const EmulatorStopped& stopped);
std::string ToJson(const EmulatorFault& fault);
/// The fault's JSON on one line, for text output.
std::string ToJsonLine(const EmulatorFault& fault);
/// {"faults": [...]}: GET /emulator/v1/faults.
std::string ToJson(const std::vector<EmulatorFault>& faults);
std::string ToJson(const EmulatorStatus& status);

/// The status the admin API sent; an error that names what is missing or malformed.
Result<EmulatorStatus> ParseEmulatorStatus(std::string_view json);

}  // namespace tpufleet::api
