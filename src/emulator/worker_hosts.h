// WorkerHosts: the machines behind the emulator's TPU nodes.
//
// The emulator's API server (api_server.h) owns node state as the Cloud TPU API shows
// it; a WorkerHosts gives each node its worker VMs. The real implementation
// (namespace_hosts.h) makes every worker a real host: its own network, mount, UTS and
// PID namespaces, an address in 198.18.0.0/15, its own /etc, /home, /root and /tmp, a
// real sshd with its own host keys, a metadata server at 169.254.169.254 and a guest
// agent that turns the node's `ssh-keys` metadata into Unix users, as on a TPU VM. The
// fake (testing/fake_worker_hosts.h) only records calls, for unit tests of the server.
//
// Nodes are named by their full resource name ("projects/p/locations/z/nodes/n").
// Implementations must be safe to call from several threads at once; calls for one
// node are serialised by the caller.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "util/status.h"

namespace tpufleet::emulator {

/// A data disk attached to a node: every worker of the node shows it as a block device,
/// in attachment order (/dev/sdb, /dev/sdc, …), as a TPU VM shows its data disks.
struct AttachedDiskSpec {
  std::string name;        // the disk's name in its zone ("data"): /dev/disk/by-id/google-NAME
  std::string image;       // its backing file, in the emulator's state dir
  bool read_only = false;  // attached READ_ONLY: writes fail on every worker
};

/// What the hosts need to know about a node to run its workers.
struct NodeHostSpec {
  std::string name;              // full resource name
  std::string id;                // the node's numeric id (as in Node.id)
  std::string accelerator_type;  // "v4-32"
  std::string family;            // its catalog family ("v4"): which chips the workers show
  int chips_per_worker = 0;      // chips each worker shows (/dev/accelN or /dev/vfio/N)
  int workers = 1;               // worker VMs (one networkEndpoint each)
  std::map<std::string, std::string> metadata;  // Node.metadata: ssh-keys, startup-script, …
  std::vector<AttachedDiskSpec> data_disks;     // Node.dataDisks, in attachment order
};

/// One running worker, as the API reports it (networkEndpoints, guest attributes).
struct WorkerInfo {
  std::string address;        // "198.18.0.7": reachable from the machine and other workers
  std::string hostname;       // "t1v-n-1a2b3c4d-w-0"
  std::string host_key;       // sshd's public host key, "ssh-ed25519 AAAA…"
};

/// Events a node's workers learn through their metadata server.
enum class HostEvent {
  kPreemptionNotice,   // instance/preempted turns TRUE (long-polls return)
  kMaintenanceNotice,  // instance/maintenance-event turns TERMINATE_ON_HOST_MAINTENANCE
};

class WorkerHosts {
 public:
  WorkerHosts() = default;
  WorkerHosts(const WorkerHosts&) = delete;
  WorkerHosts& operator=(const WorkerHosts&) = delete;
  virtual ~WorkerHosts() = default;

  /// Starts the node's workers and returns once every worker's sshd accepts
  /// connections. A node booted before (stopped, or halted by maintenance) keeps its
  /// disks (/home, /root, /etc); `new_addresses` gives its workers fresh addresses, as
  /// maintenance does. FailedPrecondition when hosts cannot be made here (not root).
  virtual Result<std::vector<WorkerInfo>> Boot(const NodeHostSpec& node, bool new_addresses) = 0;

  /// Replaces the metadata every worker serves (after a patch of Node.metadata); the
  /// guest agents apply ssh-keys changes to their users.
  virtual Status SetMetadata(const std::string& node,
                             const std::map<std::string, std::string>& metadata) = 0;

  /// Replaces the project's common instance metadata (Compute's
  /// commonInstanceMetadata: project-wide `ssh-keys`, …) that every worker of every node
  /// of `project` ("p") serves under project/attributes/, now and at later Boots; the
  /// guest agents apply ssh-keys changes to their users, on every worker at once, unless
  /// a node blocks project keys. Returns once every running worker has applied it.
  virtual Status SetProjectMetadata(const std::string& project,
                                    const std::map<std::string, std::string>& metadata) = 0;

  /// Makes `disks` the node's data disks on every running worker (a patch of
  /// Node.dataDisks): new ones appear as block devices, those no longer listed go (a
  /// worker that still has one mounted loses the mount). A later Boot uses the node's
  /// spec, which the caller keeps up to date.
  virtual Status SetDataDisks(const std::string& node,
                              const std::vector<AttachedDiskSpec>& disks) = 0;

  /// Tells the node's workers about a coming event through their metadata servers.
  virtual Status Notify(const std::string& node, HostEvent event) = 0;

  /// Powers the workers off: every process on them ends and they stop answering.
  /// Their disks stay, for a later Boot.
  virtual Status Halt(const std::string& node) = 0;

  /// Cuts one worker off the network (cut = true) or reconnects it.
  virtual Status SetCutOff(const std::string& node, int worker, bool cut) = 0;

  /// Takes chip `device` away from one worker (removed = true: its PCI entry and device
  /// node are gone, as after a failed chip) or gives it back. Kept across reboots.
  virtual Status SetDeviceRemoved(const std::string& node, int worker, int device,
                                  bool removed) = 0;

  /// Halts the workers if needed and deletes everything they had.
  virtual Status Destroy(const std::string& node) = 0;
};

}  // namespace tpufleet::emulator
