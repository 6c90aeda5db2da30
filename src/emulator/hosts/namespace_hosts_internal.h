// What namespace_hosts.cc (the nodes' operations), namespace_hosts_lifecycle.cc
// (creating the hosts, their trash, cleaning a crashed emulator's leftovers) and
// namespace_hosts_project.cc (project metadata) share: a node's and a worker's state.
// Not for other callers.
//
// Thread-safety: a Node's fields are guarded by its op_mu (and the hosts' mu_ for the
// map that holds it), as namespace_hosts.h says.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "emulator/hosts/loop_devices.h"
#include "emulator/hosts/namespace_hosts.h"

namespace tpufleet::emulator {

struct NamespaceHosts::Worker {
  std::string dir;       // <state>/nodes/<id>/w<i>
  std::string hostname;  // t1v-n-…-w-<i>
  uint32_t address = 0;  // 0 until the first boot
  std::string host_key;  // "ssh-ed25519 AAAA…", once booted
  std::string veth;      // the machine's end, while running
  pid_t pid = -1;        // the init, while running
  bool cut = false;
  std::set<int> removed_devices;  // chips a device fault took away
};

// A data disk shown on a running node's workers (namespace_hosts_disks.cc).
struct NodeDisk {
  AttachedDiskSpec spec;
  std::string device;  // "sdb": kept while attached, as on a VM
  hosts::LoopDevice loop;
};

/// "p" for "projects/p/locations/z/nodes/n"; "" for a name not of that shape.
inline std::string ProjectOfNode(std::string_view name) {
  constexpr std::string_view kPrefix = "projects/";
  if (name.substr(0, kPrefix.size()) != kPrefix) {
    return "";
  }
  name.remove_prefix(kPrefix.size());
  return std::string(name.substr(0, name.find('/')));
}

struct NamespaceHosts::Node {
  std::mutex op_mu;  // serialises the operations on this node
  NodeHostSpec spec;
  std::string dir;
  std::vector<Worker> workers;
  bool running = false;
  bool preempted = false;
  bool maintenance = false;
  int64_t version = 0;  // of the worker documents last written
  std::vector<NodeDisk> disks;  // spec.data_disks' loop devices, while running
};

/// Makes `want` the node's disks: those already shown keep their loop device and
/// device name, new ones get a loop device and the first free name (sdb, sdc, …); the
/// disks no longer wanted are moved to *gone (their loops are freed when it is), so the
/// caller frees them once no worker shows them. On error the node's disks are unchanged.
Status AttachNodeDisks(std::vector<NodeDisk>* disks, const std::vector<AttachedDiskSpec>& want,
                       std::vector<NodeDisk>* gone);

}  // namespace tpufleet::emulator
