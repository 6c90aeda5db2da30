// Up: brings every node of a fleet spec into being and ready to use.
//
// For each node id of the spec, as resumable steps that one loop advances for every node
// at once (up_steps.h; no thread per node or per worker):
//   1. Look at the cloud (every candidate zone, listed once for the whole fleet). A node
//      of this fleet that exists is adopted; a preempted or terminated one is deleted
//      and made again; one that another fleet or tool made stops the node with a
//      message (use `tpufleet import`).
//   2. Otherwise create it: zones in the spec's order, recently stocked-out ones last
//      (core/zone_choice.h); on a stockout the next zone. Queued nodes become a queued
//      resource in the first zone and wait there for capacity. Before each request the
//      store records the zone and the request id in one transaction, so a `kill -9` at
//      any point leaves a record (REQUESTED or QUEUED) that the next `up` resolves in
//      that zone first, whatever the stockout memory says since: it adopts what is
//      there, or sends the create again with the same request id, which the API answers
//      with the first request's operation. A create in another zone gets a fresh id.
//      What a stockout leaves behind is deleted before the next zone is tried, or
//      recorded as a leftover (leftovers.h) when that fails; a create whose outcome is
//      unknown and that a create elsewhere supersedes is recorded as a leftover too. A
//      zone holding a leftover of the node is never created in nor adopted from.
//   3. Wait for READY, pin each worker's host key from the guest attributes (ssh-hosts:
//      from the user's known_hosts, an earlier up's pin, or the key the host offers once
//      the user confirms it), rewrite the SSH files, wait until every worker accepts the
//      fleet key over SSH (ssh-hosts: log in with the user's own key and add the fleet
//      key to the login's authorized_keys; a host key that fails verification fails the
//      node at once, naming both fingerprints), then run the
//      spec's setup script on every worker that has not run it (a recreated worker runs
//      it again). Both run on the libssh2 fan-out engine in this process, with the fleet
//      key and the pinned host key, the workers of every node that is that far batched
//      into one job: no `ssh` process. The jobs run on the event loop that drives the
//      nodes' steps, so other nodes' cloud polls go on meanwhile, and a worker's setup
//      reuses its login check's connection. ssh-hosts machines, which take the user's
//      own keys, are the exception for the login check: OpenSSH (World::ssh), an `ssh`
//      process per worker, all at once, watched by the same loop; their setup then runs
//      on the engine like any worker's.
// Before all that, the fleet's recorded leftovers are deleted again; the report says how
// that went, and names every node that carries the fleet's label but has no record
// (untracked), which up never touches.
// Every node's record carries the spec's labels (what target selectors such as
// `team=a` match), also for nodes that are kept as they are. A node whose users changed
// gets its ssh-keys metadata replaced; one that matches the spec costs only reads. Nodes
// of the fleet in the store but not in the spec are reported, never deleted (that is
// `down`).
//
// Thread-safety: one Up at a time per state store (the CLI holds a lock file).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "control/leftovers.h"
#include "control/progress.h"
#include "control/world.h"
#include "core/catalog.h"
#include "core/fleet_spec.h"
#include "core/up_plan.h"
#include "util/status.h"

namespace tpufleet {

/// A host key up would pin on first use, for the user to confirm.
struct HostKeyQuestion {
  std::string node;
  int worker = 0;
  std::string address;      // as the spec gives it
  int port = 22;
  std::string key;          // "ssh-ed25519 AAAA…", what the host offered
  std::string fingerprint;  // "SHA256:…", as ssh-keygen -l shows it
};

struct UpOptions {
  /// The longest `up` waits for one node (queued resources included).
  std::chrono::seconds timeout{std::chrono::minutes(30)};
  /// The longest a worker's setup script may run.
  std::chrono::seconds setup_timeout{std::chrono::minutes(30)};
  /// The longest a worker may refuse the login once READY. New VMs get their keys a
  /// little after READY (gcloud retries for about 50 s); minutes more means a wrong key.
  std::chrono::seconds login_timeout{std::chrono::minutes(3)};
  /// First and longest pause between polls of an operation or a node.
  std::chrono::milliseconds poll_min{250};
  std::chrono::milliseconds poll_max{std::chrono::seconds(2)};
  /// At most this many nodes are being brought up at once (the rest wait their turn).
  int max_parallel_nodes = 32;
  /// ssh-hosts: asked about each host whose key is neither in the user's known_hosts nor
  /// pinned by an earlier up, with the key the host offers (unverified); true pins it.
  /// Unset, or false: that node fails, saying how to pin the key. Called on up's
  /// thread, one question at a time.
  std::function<bool(const HostKeyQuestion&)> confirm_host_key;
  /// Who applies the spec: its owner when it names none (control/fleet_owner.h), whom
  /// its node-hours are billed to. "": the local login (World::login).
  std::string person;
};

struct UpPlan {
  std::vector<NodePlan> nodes;             // one per node id of the spec, in spec order
  std::vector<LeftoverRecord> leftovers;   // the fleet's recorded leftovers, still there
  std::vector<UntrackedNode> untracked;    // labelled with the fleet, no record, not planned
};

/// Reads the cloud (once) and the store and says what Up would do, node by node, in
/// spec order: core's PlanNodes (core/up_plan.h) over what it read. Changes nothing.
Result<UpPlan> PlanUp(const FleetSpec& fleet, const Catalog& catalog, World& world);

struct NodeOutcome {
  std::string node;
  Status status;      // OK when the node is ready
  bool changed = false;  // up created, recreated, re-keyed or set up something
  /// What the user should know though the node is ready ("the agent is not installed on
  /// 2 workers: …"), one line each.
  std::vector<std::string> warnings{};
};

struct UpReport {
  std::vector<NodeOutcome> nodes;       // one per node id of the spec, in spec order
  std::vector<std::string> not_in_spec;  // the fleet's stored nodes the spec no longer has
  std::vector<LeftoverOutcome> leftovers;  // the fleet's recorded leftovers, tried first
  std::vector<LeftoverRecord> leftovers_left;  // the fleet's leftovers as up ends
  std::vector<UntrackedNode> untracked;    // nodes with the fleet's label and no record
};

/// Brings the fleet to its spec. The Status is an error only when nothing could be
/// attempted (no provider, no key, store broken); per-node failures are in the report.
Result<UpReport> Up(const FleetSpec& fleet, const Catalog& catalog,
                                    World& world, const UpOptions& options,
                                    ProgressObserver& progress);

/// The metadata key that holds a node's SSH keys, one "user:key" a line.
inline constexpr char kSshKeysMetadataKey[] = "ssh-keys";

/// The `ssh-keys` metadata value for a node: the fleet key for `login`, then each user
/// of the spec with each of their keys, one "user:key" line each, in spec order.
std::string SshKeysMetadata(const std::string& login, const std::string& fleet_public_key,
                            const std::vector<UserSpec>& users);

}  // namespace tpufleet
