// The fleet spec: the declarative description of a fleet that `tpufleet up` brings the
// cloud to, parsed and checked from YAML (docs/fleet-spec.md is the user's reference).
//
// ParseFleetSpec turns a document into a FleetSpec or into ONE InvalidArgument Status
// that names the file, line, column and field, says what was expected, and offers the
// nearest valid value:
//
//   fleet.yaml:7:11: nodes[0].type: unknown accelerator type "v4_32" (did you mean v4-32?)
//
// A FleetSpec that comes back is complete: every default is filled in (runtime version,
// zones, capacity, count) and resolved against the catalog (the type's canonical name,
// chips and workers), so `up` and `validate` need no further checks or lookups. It does
// not point into the Catalog it was checked against.
//
// The parser defends itself against hostile input (the server accepts specs from
// collaborators): documents over kMaxSpecBytes and documents whose anchors and aliases
// (&a / *a) expand past kMaxExpandedSize are refused before they are walked, so parsing
// time and memory stay proportional to the input. Nesting deeper than
// yaml::kMaxNestingDepth is refused with the line where it goes too deep, before a tree
// is built (yaml_reader.h), so no input can exhaust the stack.
//
// core does no I/O: callers read the file and pass its text.
//
// Thread-safety: ParseFleetSpec and the Check* functions are pure; a FleetSpec is a
// plain value.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/catalog.h"
#include "util/status.h"

namespace tpufleet {

/// Specs are hand-written and a few KiB; anything this large is a mistake or an attack.
inline constexpr size_t kMaxSpecBytes = 1 << 20;
/// The most a document may grow to when its aliases are expanded, counted as one per
/// node plus the bytes of every scalar. 8x the largest allowed file leaves room for
/// honest reuse (`users: *lab_members` on every node) and stops "billion laughs".
inline constexpr size_t kMaxExpandedSize = 8 * kMaxSpecBytes;
/// The most slices one node entry may ask for. tpufleet is built and measured for
/// fleets of up to 256 workers; a larger count is more likely a typo than a plan.
inline constexpr int kMaxCount = 256;
/// GCP allows 64 labels on a resource; tpufleet keeps 4 for its own (tpufleet-*).
inline constexpr int kMaxLabels = 60;
/// A node's setup script travels in instance metadata, whose values GCE caps at 256 KiB.
inline constexpr size_t kMaxSetupBytes = 256 * 1024;
/// An OpenSSH public key line. RSA-16384, the largest key anyone generates, is ~2.8 KB.
inline constexpr size_t kMaxSshKeyBytes = 8 * 1024;

/// Who runs the fleet's machines.
enum class Provider {
  kGcpTpu,    // Cloud TPU API v2: tpufleet creates and deletes the nodes
  kEmulator,  // gcp-tpu pointed at `tpufleet emulator` on this machine
  kSshHosts,  // existing machines reached over SSH; tpufleet never creates or deletes them
};

/// How a Cloud TPU node is paid for.
enum class Capacity {
  kOnDemand,  // list price; may fail with a stockout
  kSpot,      // 60-91% cheaper; may be preempted at any time, then must be recreated
  kReserved,  // from the project's reservation
};

/// How a data disk is attached (the TPU API's AttachedDisk.mode).
enum class DiskMode {
  kReadOnly,   // READ_ONLY: shared by any number of nodes and workers
  kReadWrite,  // READ_WRITE: attached to exactly one VM
};

/// What the reconciler does to a node that has been idle for IdlePolicy::after.
enum class IdleAction {
  kDelete,  // delete the node (its boot disk is lost; data disks are kept)
  kStop,    // stop it, keeping its boot disk; single-host nodes only
};

/// What the reconciler does once a fleet has spent its budget (docs/serve.md). Creating
/// stops in every case; the rest says which of the fleet's billing nodes go.
enum class BudgetAction {
  kStopCreating,  // "stop-creating": create nothing more; running nodes keep running
  kDeleteSpot,    // "delete-spot": also delete the spot nodes (the ones losing least)
  kDeleteAll,     // "delete-all": also delete every billing node (data disks are kept)
};

/// "gcp-tpu", "spot", "read-only", "delete", "stop-creating": the spelling used in specs
/// and output.
std::string_view ProviderName(Provider p);
std::string_view CapacityName(Capacity c);
std::string_view DiskModeName(DiskMode m);
std::string_view IdleActionName(IdleAction a);
std::string_view BudgetActionName(BudgetAction a);

/// A Unix account created on every worker of the nodes it applies to.
struct UserSpec {
  std::string name;               // Unix login name, checked by CheckUserName
  std::vector<std::string> keys;  // OpenSSH public key lines, at least one
  bool sudo = false;              // member of the sudo group (passwordless)
  int line = 0;                   // 1-based line of the entry in the spec
};

/// An existing persistent disk or Hyperdisk attached to every worker of a node.
struct DataDiskSpec {
  std::string source;                   // "projects/P/zones/Z/disks/D", as the TPU API wants it
  std::string project;                  // P from source: the fleet's (unless given as a number)
  std::string zone;                     // Z from source: the only zone the node can be created in
  DiskMode mode = DiskMode::kReadOnly;  // read-only unless the spec says otherwise
  std::string name;                     // D from source: the worker shows it as google-D
  std::string mount;                    // where the agent mounts it on every worker; "": not
};

/// A queued-resource request: Cloud TPU waits for capacity instead of failing at once.
struct QueuedSpec {
  /// How long the request may wait before Cloud TPU gives up; nullopt: no deadline.
  std::optional<std::chrono::seconds> valid_until;
};

/// When the reconciler reclaims an idle node, and how.
struct IdlePolicy {
  std::chrono::seconds after{0};            // idle this long (no job, accelerators unused)
  IdleAction action = IdleAction::kDelete;  // then do this
};

/// When a spot node that keeps being lost is recreated on demand instead: after `after`
/// losses (preemptions, or stockouts of its create) within `within`. The next recreate
/// after the losses have aged out of the window is spot again.
struct SpotFallback {
  int after = 0;                  // 1 .. kMaxSpotFallbackAfter
  std::chrono::seconds within{0};  // above zero
};
/// A larger count is no fallback at all: a spot node lost that often is better given up.
inline constexpr int kMaxSpotFallbackAfter = 100;

/// One entry of `nodes:`: `count` identical slices (or, for ssh-hosts, a group of hosts).
struct NodeSpec {
  std::string name;  // as written; the node id itself when count is 1
  /// The node ids `up` creates: {name} when count is 1, else name-0 .. name-(count-1).
  std::vector<std::string> names;
  int count = 1;  // how many identical slices; always 1 for ssh-hosts
  int line = 0;   // 1-based line of the entry in the spec, for later messages

  // Cloud TPU nodes (providers gcp-tpu and emulator); empty/zero for ssh-hosts.
  std::string type;             // canonical API name, aliases resolved: "v5litepod-8" for "v5e-8"
  std::string family;           // "v5litepod"
  int chips = 0;                // per slice
  int workers = 1;              // worker VMs per slice (hosts.size() for ssh-hosts)
  std::string runtime_version;  // as given, or the family's default from the catalog
  bool runtime_version_defaulted = false;     // true when the spec left it out
  std::vector<std::string> zones;             // candidates in order of preference, never empty
  bool zones_defaulted = false;               // true when taken from the catalog (or a data disk)
  Capacity capacity = Capacity::kOnDemand;    // how the slices are paid for
  std::optional<QueuedSpec> queued;           // nullopt: create the node directly
  std::map<std::string, std::string> labels;  // GCP labels (CheckLabelKey/Value)
  std::string setup;                          // shell script run on every worker after creation
  std::vector<DataDiskSpec> data_disks;       // all in one zone, zones[0] (and only)
  std::optional<std::chrono::seconds> ttl;    // delete this long after creation
  std::optional<IdlePolicy> idle;             // nullopt: never reclaimed for idleness
  std::optional<SpotFallback> spot_fallback;  // capacity spot only; nullopt: always spot

  // Both kinds of provider.
  std::vector<UserSpec> users;  // node-only users, added to the fleet-wide ones

  // ssh-hosts only.
  std::vector<std::string> hosts;  // one address per worker: DNS name, IPv4 or IPv6
  std::string ssh_user;  // tpufleet's own login (CheckLoginName); "" lets ssh_config decide
  int port = 0;          // SSH port; 0 lets ssh_config decide (usually 22)
};

struct BudgetSpec {
  std::optional<double> usd_per_day;  // ceiling on what the fleet may spend in a UTC day
  std::optional<double> usd_total;    // ceiling over the fleet's whole life
  BudgetAction action = BudgetAction::kStopCreating;  // what happens at the ceiling
};

/// What the fleet shows outside tpufleet (docs/fleet-spec.md, docs/security.md).
struct MonitoringSpec {
  /// The TCP port on which every worker's agent serves GET /metrics in Prometheus' text
  /// format (agent/export), on all addresses; 0: not served (the default).
  int prometheus_port = 0;
};
/// The ports a spec may give: unprivileged, so no other system service's.
inline constexpr int kMinPrometheusPort = 1024;
inline constexpr int kMaxPrometheusPort = 65535;

struct FleetSpec {
  std::string name;                       // the fleet's name: [a-z][a-z0-9-]*, at most 63
  Provider provider = Provider::kGcpTpu;  // who runs the machines
  std::string project;                    // GCP project id; "" for ssh-hosts
  /// The person its node-hours are billed to (`cost`); "": whoever applies the spec.
  std::string owner;
  std::optional<BudgetSpec> budget;       // nullopt: no budget (gcp-tpu and emulator only)
  std::vector<UserSpec> users;            // fleet-wide users, added on every node
  std::vector<NodeSpec> nodes;            // in spec order, at least one
  MonitoringSpec monitoring;              // nothing exposed unless the spec says so
};

/// Parses and checks a fleet spec. `origin` names the document in messages (usually its
/// path); `catalog` says which types, zones and runtime versions exist. Every problem
/// is InvalidArgument with "origin:line:col: field.path: what was expected".
Result<FleetSpec> ParseFleetSpec(std::string_view yaml_text, std::string_view origin,
                                 const Catalog& catalog);

/// Fleet-wide users followed by the node's own: everyone who gets an account on `node`.
std::vector<UserSpec> UsersOn(const FleetSpec& fleet, const NodeSpec& node);

// Checks of single values, shared with commands that take them from flags
// (`tpufleet users add NAME --key KEY`). Each returns OK or InvalidArgument saying what
// is wrong, without a location; ParseFleetSpec adds file, line and field.

/// A Cloud TPU node id (and fleet names): a lowercase letter, then lowercase letters,
/// digits and hyphens, not ending in a hyphen, at most 63 characters. With count > 1
/// the name must leave room for the "-N" suffix.
Status CheckNodeName(std::string_view name, int count = 1);

/// A Unix login: [a-z_][a-z0-9_-]{0,31}, and not a system account (root, daemon, ...):
/// the accounts tpufleet creates.
Status CheckUserName(std::string_view name);
/// Only the syntax of CheckUserName: an existing account tpufleet logs in as (ssh_user),
/// which may well be root.
Status CheckLoginName(std::string_view name);

/// An OpenSSH public key line: "TYPE BASE64 [COMMENT]" with TYPE one of ssh-ed25519,
/// ssh-rsa, ecdsa-sha2-nistp{256,384,521}, sk-ssh-ed25519@openssh.com or
/// sk-ecdsa-sha2-nistp256@openssh.com (security keys). The base64
/// must decode to a well-formed key blob whose embedded type is TYPE (this catches keys
/// cut short by a bad paste); no options prefix, no control characters.
Status CheckSshPublicKey(std::string_view key);

/// A GCP label key: [a-z][a-z0-9_-]{0,62}, not starting with "tpufleet" (tpufleet's
/// own labels).
Status CheckLabelKey(std::string_view key);
/// A GCP label value: [a-z0-9_-]{1,63} (GCP also allows empty values; specs do not).
Status CheckLabelValue(std::string_view value);

/// A disk's name in its zone: [a-z0-9-]{1,63} (the last part of a data disk's source).
Status CheckDiskName(std::string_view name);
/// Where a data disk is mounted: an absolute directory of letters, digits, '-', '_' and
/// '.' parts (no "..", no trailing '/'), at most 255 bytes, not / nor over a system
/// directory (/etc, /usr, /home, /tmp, /var, …).
Status CheckMountPath(std::string_view path);

/// An SSH host address: a DNS name, an IPv4 address or an IPv6 address (no brackets,
/// no port; the port is a field of its own).
Status CheckHostAddress(std::string_view host);

/// `s` in double quotes for an error message: at most 64 characters (then "..."),
/// control characters as \xNN, so a mistaken or hostile value can neither flood nor
/// repaint the terminal.
std::string QuoteForMessage(std::string_view s);

}  // namespace tpufleet
