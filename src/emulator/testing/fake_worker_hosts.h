// FakeWorkerHosts: a WorkerHosts for unit tests of the emulator's API server. It
// answers like SyntheticHosts (addresses in 198.18.0.0/15, fake ssh-ed25519 host keys,
// "t1v-n-…-w-i" hostnames) and records every call as a line of text
// ("Boot projects/p/locations/z/nodes/n new_addresses=0"), so tests can assert on the
// calls the server made. `fail_boot` makes every Boot fail with that status.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "emulator/synthetic_hosts.h"

namespace tpufleet::emulator {

class FakeWorkerHosts final : public SyntheticHosts {
 public:
  Result<std::vector<WorkerInfo>> Boot(const NodeHostSpec& node, bool new_addresses) override {
    Record("Boot " + node.name + " new_addresses=" + (new_addresses ? "1" : "0") + " workers=" +
           std::to_string(node.workers));
    {
      std::lock_guard<std::mutex> l(calls_mu_);
      last_boot_spec_ = node;
      if (!fail_boot_.ok()) {
        return fail_boot_;
      }
    }
    return SyntheticHosts::Boot(node, new_addresses);
  }
  Status SetMetadata(const std::string& node, const std::map<std::string, std::string>& metadata) override {
    std::string keys;
    for (const auto& [k, v] : metadata) {
      keys += (keys.empty() ? "" : ",") + k;
    }
    Record("SetMetadata " + node + " keys=" + keys);
    return SyntheticHosts::SetMetadata(node, metadata);
  }
  Status SetProjectMetadata(const std::string& project,
                            const std::map<std::string, std::string>& metadata) override {
    std::string keys;
    for (const auto& [k, v] : metadata) {
      keys += (keys.empty() ? "" : ",") + k;
    }
    Record("SetProjectMetadata " + project + " keys=" + keys);
    {
      std::lock_guard<std::mutex> l(calls_mu_);
      if (!fail_project_metadata_.ok()) {
        return fail_project_metadata_;
      }
    }
    return SyntheticHosts::SetProjectMetadata(project, metadata);
  }
  Status Notify(const std::string& node, HostEvent event) override {
    Record("Notify " + node + (event == HostEvent::kPreemptionNotice ? " preemption" : " maintenance"));
    return Status::Ok();
  }
  Status Halt(const std::string& node) override {
    Record("Halt " + node);
    return SyntheticHosts::Halt(node);
  }
  Status SetDataDisks(const std::string& node, const std::vector<AttachedDiskSpec>& disks) override {
    std::string names;
    for (const AttachedDiskSpec& d : disks) {
      names += (names.empty() ? "" : ",") + d.name + (d.read_only ? ":ro" : ":rw");
    }
    Record("SetDataDisks " + node + " disks=" + names);
    return Status::Ok();
  }
  Status SetCutOff(const std::string& node, int worker, bool cut) override {
    Record("SetCutOff " + node + " worker=" + std::to_string(worker) + " cut=" + (cut ? "1" : "0"));
    return Status::Ok();
  }
  Status SetDeviceRemoved(const std::string& node, int worker, int device, bool removed) override {
    Record("SetDeviceRemoved " + node + " worker=" + std::to_string(worker) +
           " device=" + std::to_string(device) + " removed=" + (removed ? "1" : "0"));
    return Status::Ok();
  }
  Status Destroy(const std::string& node) override {
    Record("Destroy " + node);
    return SyntheticHosts::Destroy(node);
  }

  /// Every call so far, oldest first.
  std::vector<std::string> calls() const {
    std::lock_guard<std::mutex> l(calls_mu_);
    return calls_;
  }
  /// The calls whose text starts with `prefix`.
  std::vector<std::string> CallsStartingWith(const std::string& prefix) const {
    std::vector<std::string> out;
    for (const std::string& c : calls()) {
      if (c.rfind(prefix, 0) == 0) {
        out.push_back(c);
      }
    }
    return out;
  }
  void ClearCalls() {
    std::lock_guard<std::mutex> l(calls_mu_);
    calls_.clear();
  }
  void set_fail_boot(Status s) {
    std::lock_guard<std::mutex> l(calls_mu_);
    fail_boot_ = std::move(s);
  }
  void set_fail_project_metadata(Status s) {
    std::lock_guard<std::mutex> l(calls_mu_);
    fail_project_metadata_ = std::move(s);
  }
  /// The project metadata every worker of `project` serves now.
  std::map<std::string, std::string> project_metadata_of(const std::string& project) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = project_metadata_.find(project);
    return it == project_metadata_.end() ? std::map<std::string, std::string>() : it->second;
  }
  NodeHostSpec last_boot_spec() const {
    std::lock_guard<std::mutex> l(calls_mu_);
    return last_boot_spec_;
  }
  /// The metadata the node's workers serve now (after Boot or SetMetadata).
  std::map<std::string, std::string> metadata_of(const std::string& node) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = nodes_.find(node);
    return it == nodes_.end() ? std::map<std::string, std::string>() : it->second.metadata;
  }

 private:
  void Record(std::string call) {
    std::lock_guard<std::mutex> l(calls_mu_);
    calls_.push_back(std::move(call));
  }

  mutable std::mutex calls_mu_;
  std::vector<std::string> calls_;  // guarded by calls_mu_
  Status fail_boot_;                // guarded by calls_mu_
  Status fail_project_metadata_;    // guarded by calls_mu_
  NodeHostSpec last_boot_spec_;     // guarded by calls_mu_
};

}  // namespace tpufleet::emulator
