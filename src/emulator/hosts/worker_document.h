// The worker document: everything a worker's init needs, written by the machine side
// (NamespaceHosts) as one JSON file per worker and read by the worker's init
// (tpufleet-emulator-worker), which serves part of it as the metadata server.
//
// File: <state>/nodes/<node id>/w<i>/meta/metadata.json, replaced atomically (rename)
// on every change, after which the machine sends the init SIGHUP. Format:
//
//   {
//     "format": "tpufleet-worker/1",
//     "version": 3,                       // bumped on every write; the init acks it
//     "worker": {                         // the worker's own network and name
//       "index": 0, "hostname": "t1v-n-1a2b3c4d-w-0", "address": "198.18.0.2",
//       "prefix_length": 18, "gateway": "198.18.0.1",
//       "hosts": [{"address": "198.18.0.2", "hostname": "t1v-n-1a2b3c4d-w-0"}, …]
//     },
//     "accelerators": {"family": "v4", "chips": 4, "removed": [2]},  // accelerators.h
//     "disks": [{"device": "sdb", "name": "data", "major": 7, "minor": 3,  // worker_disks.h
//                "read_only": true}, …],
//     "computeMetadata": {"v1": {         // served verbatim at /computeMetadata/v1/…
//       "instance": {
//         "attributes": {"accelerator-type": "v4-32", "agent-worker-number": "0",
//                        "worker-network-endpoints": "t1v-n-…-w-0:<id>:198.18.0.2,…",
//                        "instance-id": "n1", "tpu-env": "ACCELERATOR_TYPE: 'v4-32'\n…",
//                        "ssh-keys": "…", <every other Node.metadata key>},
//         "hostname": "t1v-n-…-w-0.us-central2-b.c.p.internal", "id": "…",
//         "name": "t1v-n-…-w-0", "zone": "projects/<n>/zones/us-central2-b",
//         "machine-type": "projects/<n>/machineTypes/ct4p-hightpu-4t",
//         "disks": {"0": {"device-name": "persistent-disk-0", "index": "0", "mode": …,
//                         "interface": "SCSI", "type": "PERSISTENT"}, "1": <data disk>, …},
//         "preempted": "FALSE", "maintenance-event": "NONE",
//         "network-interfaces": {"0": {"ip": …, "gateway": …, "subnetmask": …, …}},
//         "service-accounts": {"default": {"email": …, "aliases": "default", "scopes": …}}
//       },
//       "project": {"project-id": "p", "numeric-project-id": "…",
//                   "attributes": {<the project's commonInstanceMetadata>}}
//     }}
//   }
//
// Leaves are strings; objects are directories. The access token is not in the file: the
// metadata server makes one up.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "emulator/hosts/accelerators.h"
#include "util/status.h"

namespace tpufleet::emulator::hosts {

inline constexpr std::string_view kWorkerDocumentFormat = "tpufleet-worker/1";

/// A data disk as a worker shows it: /dev/<device>, a block node with the numbers of the
/// loop device the machine made over the disk's image, and /dev/disk/by-id/google-<name>.
struct DataDiskDevice {
  std::string device;  // "sdb"
  std::string name;    // the disk's name: [a-z]([-a-z0-9]*[a-z0-9])?, at most 63
  uint32_t major = 0;
  uint32_t minor = 0;
  bool read_only = false;

  bool operator==(const DataDiskDevice&) const = default;
};

/// True for a name GCE accepts for a disk (RFC 1035 label, at most 63 characters).
bool IsDiskName(std::string_view name);

struct WorkerAddress {
  std::string hostname;  // "t1v-n-1a2b3c4d-w-0"
  std::string address;   // "198.18.0.2"
};

/// What the machine side knows about one worker when it writes its document.
struct WorkerDocumentInput {
  int64_t version = 1;
  std::string node_name;               // "projects/p/locations/us-central2-b/nodes/n1"
  std::string node_id;                 // Node.id
  std::string accelerator_type;        // "v4-32"
  int index = 0;                       // this worker
  std::vector<WorkerAddress> workers;  // every worker of the node, in index order
  int prefix_length = 18;
  std::string gateway;                          // the bridge's address
  std::map<std::string, std::string> metadata;  // Node.metadata
  std::map<std::string, std::string> project_metadata;  // Compute's commonInstanceMetadata
  bool preempted = false;                       // instance/preempted = TRUE
  bool maintenance = false;  // instance/maintenance-event = TERMINATE_ON_HOST_MAINTENANCE
  std::string accelerator_family;   // catalog family: "v4"
  int chips_per_worker = 0;         // chips this worker shows
  std::set<int> removed_devices;    // this worker's chips taken away by a device fault
  std::vector<DataDiskDevice> disks;  // the node's data disks, on every worker
};

/// The document's JSON text.
std::string BuildWorkerDocument(const WorkerDocumentInput& in);

/// What the init reads back.
struct WorkerDocument {
  int64_t version = 0;
  int index = 0;
  std::string hostname;
  std::string address;
  int prefix_length = 0;
  std::string gateway;
  std::vector<WorkerAddress> hosts;
  std::string domain;    // "us-central2-b.c.p.internal", for /etc/hosts
  std::string ssh_keys;  // what the guest agent applies: MetadataSshKeys (guest_agent.h)
  AcceleratorSpec accelerators;
  std::vector<DataDiskDevice> disks;
};

/// Parses and checks a document (format, addresses, hostnames). InvalidArgument on any
/// problem.
Result<WorkerDocument> ParseWorkerDocument(std::string_view json);

/// "t1v-n-1a2b3c4d-w-3": the TPU VM naming scheme, the hex part derived from the id.
std::string WorkerHostname(std::string_view node_id, int worker);

/// The `worker-network-endpoints` value: `<hostname>:<instance id>:<address>` per worker,
/// comma-separated, worker 0 first (JAX takes the third field as the address).
std::string WorkerNetworkEndpoints(std::string_view node_id,
                                   const std::vector<WorkerAddress>& workers);

}  // namespace tpufleet::emulator::hosts
