// NamespaceHosts::SetProjectMetadata: a project's common instance metadata, served by
// every worker of every node of the project (project/attributes/ in the worker
// document, worker_document.h), whose guest agents then apply its ssh-keys.
#include "emulator/hosts/namespace_hosts.h"
#include "emulator/hosts/namespace_hosts_internal.h"
#include "util/strings.h"

namespace tpufleet::emulator {

Status NamespaceHosts::SetProjectMetadata(const std::string& project,
                                          const std::map<std::string, std::string>& metadata) {
  std::vector<std::shared_ptr<Node>> nodes;
  {
    // A Boot that registers its node after this section reads the new metadata when it
    // writes its documents; one registered before it is in `nodes`.
    std::lock_guard<std::mutex> l(mu_);
    project_metadata_[project] = metadata;
    std::string prefix = "projects/" + project + "/";
    for (auto it = nodes_.lower_bound(prefix); it != nodes_.end() && StartsWith(it->first, prefix);
         ++it) {
      nodes.push_back(it->second);
    }
  }
  // Every node's workers are told before any is waited for, so that the change takes
  // effect on all of them at once.
  Status first;
  std::vector<std::shared_ptr<Node>> told;
  for (const std::shared_ptr<Node>& node : nodes) {
    std::lock_guard<std::mutex> op(node->op_mu);
    if (!node->running) {
      continue;  // its next Boot writes it
    }
    if (Status s = WriteDocuments(*node); !s.ok()) {
      first = first.ok() ? s : first;
      continue;
    }
    SignalReload(*node);
    told.push_back(node);
  }
  for (const std::shared_ptr<Node>& node : told) {
    std::lock_guard<std::mutex> op(node->op_mu);
    if (Status s = WaitApplied(*node); !s.ok()) {
      first = first.ok() ? s : first;
    }
  }
  return first;
}

}  // namespace tpufleet::emulator
