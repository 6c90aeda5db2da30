// NamespaceHosts' data disks (namespace_hosts.h, loop_devices.h): which loop device and
// device name each attached disk has on a running node, and attaching or detaching them
// while it runs.
#include <algorithm>
#include <set>

#include "emulator/hosts/namespace_hosts_internal.h"

namespace tpufleet::emulator {

Status AttachNodeDisks(std::vector<NodeDisk>* disks, const std::vector<AttachedDiskSpec>& want,
                       std::vector<NodeDisk>* gone) {
  auto same = [](const AttachedDiskSpec& a, const AttachedDiskSpec& b) {
    return a.name == b.name && a.image == b.image && a.read_only == b.read_only;
  };
  // New loops first: a failure leaves the node as it was.
  std::vector<hosts::LoopDevice> fresh;
  for (const AttachedDiskSpec& w : want) {
    bool shown = std::any_of(disks->begin(), disks->end(),
                             [&](const NodeDisk& d) { return same(d.spec, w); });
    if (!shown) {
      TPUFLEET_ASSIGN_OR_RETURN(hosts::LoopDevice loop, hosts::LoopDevice::Attach(w));
      fresh.push_back(std::move(loop));
    }
  }
  std::vector<NodeDisk> next;
  std::set<std::string> used;
  for (const AttachedDiskSpec& w : want) {
    auto it = std::find_if(disks->begin(), disks->end(),
                           [&](const NodeDisk& d) { return same(d.spec, w) && !d.device.empty(); });
    if (it != disks->end()) {
      used.insert(it->device);
      next.push_back(std::move(*it));
      it->device.clear();  // moved
    } else {
      next.push_back(NodeDisk{w, "", {}});
    }
  }
  size_t k = 0;
  for (NodeDisk& d : next) {
    if (!d.device.empty()) {
      continue;
    }
    for (char letter = 'b'; letter <= 'z'; ++letter) {
      std::string name = std::string("sd") + letter;
      if (used.insert(name).second) {
        d.device = name;
        break;
      }
    }
    d.loop = std::move(fresh[k++]);
  }
  for (NodeDisk& d : *disks) {
    if (!d.device.empty()) {
      gone->push_back(std::move(d));
    }
  }
  *disks = std::move(next);
  return Status::Ok();
}

Status NamespaceHosts::SetDataDisks(const std::string& name,
                                    const std::vector<AttachedDiskSpec>& disks) {
  TPUFLEET_TRY(hosts::ValidateDataDisks(disks));
  std::shared_ptr<Node> node = FindNode(name);
  if (node == nullptr) {
    return Status::Ok();  // never booted: its first Boot shows the spec's disks
  }
  std::lock_guard<std::mutex> op(node->op_mu);
  node->spec.data_disks = disks;
  if (!node->running) {
    return Status::Ok();  // the next Boot shows them
  }
  std::vector<NodeDisk> gone;  // freed when this returns: no worker shows them by then
  TPUFLEET_TRY(AttachNodeDisks(&node->disks, disks, &gone));
  TPUFLEET_TRY(WriteDocuments(*node));
  SignalReload(*node);
  return WaitApplied(*node);
}

}  // namespace tpufleet::emulator
