// CloudProvider: one cloud (or one set of existing machines) as `control` sees it. (Named
// so to stay clear of core's Provider enum, the spellings a spec uses.)
//
// Every call is one step against the outside world: start a create, read a node, list a
// zone, start a delete or a stop. Waiting, zone failover, progress and state are control's; a
// provider never sleeps except inside its own retries of transient failures (429/5xx,
// timeouts: capped, jittered backoff, then Unavailable).
//
// Errors are classified by what control does next (util/status.h):
//   ResourceExhausted  a stockout: try the next zone
//   AlreadyExists      the id is taken: adopt the node if it is ours, else stop
//   NotFound           the node or operation does not exist (Get of a deleted node)
//   FailedPrecondition quota, a bad type for the zone, a bad state: stop, print message
//   PermissionDenied   credentials or IAM: stop, say which credentials were used
//   InvalidArgument    the API refused the request as malformed: stop
//   Unavailable/Timeout retries ran out: stop this attempt; a later `up` resumes
// Messages carry the API's own text, so the user sees what Google said.
//
// GcpTpuProvider (gcp_tpu.h) speaks Cloud TPU API v2, to Google or to the emulator (only
// the endpoint and the credentials differ). SshHostsProvider (ssh_hosts.h) reports the
// machines a spec lists by address and refuses to create, delete or stop anything.
//
// Thread-safety: every method may be called from several threads at once.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/fleet_spec.h"
#include "core/node_record.h"
#include "core/node_state.h"
#include "util/clock.h"
#include "util/status.h"

namespace tpufleet {

/// One worker VM of a node, in worker order (index = worker id).
struct CloudWorker {
  int index = 0;
  std::string address;           // internal address (networkEndpoints[i].ipAddress)
  std::string external_address;  // accessConfig.externalIp, "" when none

  /// What SSH connects to from outside the VPC: the external address when there is one.
  const std::string& SshAddress() const {
    return external_address.empty() ? address : external_address;
  }
};

/// A node as the cloud reports it.
struct CloudNode {
  std::string id;               // "trainer"
  std::string zone;             // "us-central2-b"
  std::string cloud_name;       // "projects/p/locations/us-central2-b/nodes/trainer"
  std::string type;             // "v4-32"
  std::string runtime_version;
  NodeState state;              // Node.State (kReady, kPreempted, …; UNREACHABLE: ssh-hosts)
  std::string health;           // Node.Health name, "" when unset
  Capacity capacity = Capacity::kOnDemand;  // from schedulingConfig
  std::string queued_resource;  // full name of the QR that made it, "" if none
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> metadata;  // "ssh-keys", …
  std::vector<CloudWorker> workers;
  std::vector<NodeDisk> data_disks;  // dataDisks, in the API's order
  std::optional<Clock::WallTime> create_time;
};

/// A queued resource as the cloud reports it.
struct CloudQueuedResource {
  std::string id;          // the queuedResourceId; tpufleet uses the node id
  std::string zone;
  std::string cloud_name;  // "projects/p/locations/z/queuedResources/id"
  NodeState state;         // QueuedResourceState (kWaitingForResources, kActive, …)
  Status failure;          // why, when state is FAILED (classified as above)
  std::vector<std::string> node_ids;  // the nodes it makes
};

/// What the node's guest attributes say about one worker: its SSH host key and name.
struct WorkerIdentity {
  int index = 0;
  std::string host_key;  // "ssh-ed25519 AAAA…"
  std::string hostname;  // "t1v-n-…-w-0"
  /// ssh-hosts only, when host_key is "": the key the host offers now, unverified. Up
  /// pins it only once the user has confirmed its fingerprint.
  std::string offered_host_key;
};

/// Everything needed to create one node, directly or through a queued resource.
struct CreateNodeRequest {
  std::string zone;
  std::string node_id;
  std::string type;  // canonical accelerator type, "v4-32"
  std::string runtime_version;
  Capacity capacity = Capacity::kOnDemand;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> metadata;  // "ssh-keys": one "user:key comment" a line
  std::vector<DataDiskSpec> data_disks;
  /// Set: create a queued resource whose id is node_id and which makes that one node.
  std::optional<QueuedSpec> queued;
  /// Same id on a retry of the same create: the API then does it at most once. A UUID.
  std::string request_id;
};

/// A long-running operation. `done` with an OK `error` means it succeeded.
struct CloudOperation {
  std::string name;  // "projects/p/locations/z/operations/operation-…"
  bool done = false;
  Status error;      // classified as above; OK unless done and failed
};

class CloudProvider {
 public:
  CloudProvider() = default;
  CloudProvider(const CloudProvider&) = delete;
  CloudProvider& operator=(const CloudProvider&) = delete;
  virtual ~CloudProvider() = default;

  /// "gcp-tpu", "ssh-hosts": as stored in NodeRecord::provider.
  virtual std::string_view Name() const = 0;

  /// Starts creating a node (nodes.create, or queuedResources.create when
  /// request.queued is set). AlreadyExists when the id is taken in that zone.
  virtual Result<CloudOperation> CreateNode(const CreateNodeRequest& request) = 0;
  /// Starts deleting a node. NotFound when it is already gone.
  virtual Result<CloudOperation> DeleteNode(std::string_view zone, std::string_view node_id) = 0;
  /// Starts stopping a single-host node (READY → STOPPING → STOPPED): its VM is shut down
  /// and no longer billed; its disks and id stay. NotFound when it does not exist;
  /// InvalidArgument, with the API's text, for a pod or a node not READY.
  virtual Result<CloudOperation> StopNode(std::string_view zone, std::string_view node_id) = 0;
  /// Starts starting a stopped node (STOPPED → STARTING → READY, new addresses and host
  /// keys possible). NotFound when it does not exist; FailedPrecondition or
  /// InvalidArgument, with the API's text, when it is not STOPPED.
  virtual Result<CloudOperation> StartNode(std::string_view zone, std::string_view node_id) = 0;
  /// Starts deleting a queued resource; `force` deletes its nodes first.
  virtual Result<CloudOperation> DeleteQueuedResource(std::string_view zone, std::string_view id,
                                                      bool force) = 0;
  /// Replaces the node's `ssh-keys` metadata entry (other metadata is kept).
  virtual Result<CloudOperation> SetSshKeys(std::string_view zone, std::string_view node_id,
                                            std::string_view ssh_keys) = 0;
  /// One look at an operation (operations.get).
  virtual Result<CloudOperation> GetOperation(std::string_view name) = 0;

  /// NotFound when the node does not exist.
  virtual Result<CloudNode> GetNode(std::string_view zone, std::string_view node_id) = 0;
  /// NotFound when the queued resource does not exist.
  virtual Result<CloudQueuedResource> GetQueuedResource(std::string_view zone,
                                                        std::string_view id) = 0;
  /// Every node in the given zones (all pages), the zones asked concurrently.
  virtual Result<std::vector<CloudNode>> ListNodes(const std::vector<std::string>& zones) = 0;
  /// Every queued resource in the given zones (all pages), asked concurrently.
  virtual Result<std::vector<CloudQueuedResource>> ListQueuedResources(
      const std::vector<std::string>& zones) = 0;
  /// Host keys and hostnames of every worker, in worker order (getGuestAttributes).
  /// A worker that has not published its key yet has an empty host_key.
  virtual Result<std::vector<WorkerIdentity>> GetWorkerIdentities(std::string_view zone,
                                                                  std::string_view node_id) = 0;
};

}  // namespace tpufleet
