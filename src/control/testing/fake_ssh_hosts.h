// FakeSshHosts: the ssh-hosts provider as `up` sees it, for tests, and a ProviderSource
// that hands it out for every fleet: every node READY, each host with the key the test
// says the user's known_hosts has, or else the key it offers. Creates and deletes are
// refused as the real one refuses them.
//
// Thread-safety: fill `nodes` before use; then read-only.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "control/world.h"
#include "provider/provider.h"

namespace tpufleet::testing {

class FakeSshHosts final : public CloudProvider, public ProviderSource {
 public:
  struct Host {
    std::string address;
    std::string known;    // in the user's known_hosts
    std::string offered;  // what it offers when not known
  };
  std::map<std::string, std::vector<Host>> nodes;

  Result<CloudProvider*> ForFleet(const FleetSpec&) override { return this; }
  Result<CloudProvider*> ForRecord(const NodeRecord&) override { return this; }
  std::string_view Name() const override { return "ssh-hosts"; }
  Result<CloudOperation> CreateNode(const CreateNodeRequest&) override { return No(); }
  Result<CloudOperation> DeleteNode(std::string_view, std::string_view) override { return No(); }
  Result<CloudOperation> StopNode(std::string_view, std::string_view) override { return No(); }
  Result<CloudOperation> StartNode(std::string_view, std::string_view) override { return No(); }
  Result<CloudOperation> DeleteQueuedResource(std::string_view, std::string_view,
                                              bool) override {
    return No();
  }
  Result<CloudOperation> SetSshKeys(std::string_view, std::string_view,
                                    std::string_view) override {
    return No();
  }
  Result<CloudOperation> GetOperation(std::string_view) override { return NotFoundError("no"); }
  Result<CloudNode> GetNode(std::string_view, std::string_view id) override {
    auto it = nodes.find(std::string(id));
    if (it == nodes.end()) {
      return NotFoundError("no node");
    }
    CloudNode n;
    n.id = it->first;
    n.cloud_name = "ssh-hosts/" + n.id;
    n.state = NodeState::kReady;
    for (size_t i = 0; i < it->second.size(); ++i) {
      n.workers.push_back({static_cast<int>(i), it->second[i].address, ""});
    }
    return n;
  }
  Result<CloudQueuedResource> GetQueuedResource(std::string_view, std::string_view) override {
    return NotFoundError("no");
  }
  Result<std::vector<CloudNode>> ListNodes(const std::vector<std::string>&) override {
    std::vector<CloudNode> out;
    for (const auto& [id, hosts] : nodes) {
      out.push_back(*GetNode("", id));
    }
    return out;
  }
  Result<std::vector<CloudQueuedResource>> ListQueuedResources(
      const std::vector<std::string>&) override {
    return std::vector<CloudQueuedResource>{};
  }
  Result<std::vector<WorkerIdentity>> GetWorkerIdentities(std::string_view,
                                                          std::string_view id) override {
    std::vector<WorkerIdentity> out;
    const std::vector<Host>& hosts = nodes.at(std::string(id));
    for (size_t i = 0; i < hosts.size(); ++i) {
      out.push_back({static_cast<int>(i), hosts[i].known, hosts[i].address,
                     hosts[i].known.empty() ? hosts[i].offered : ""});
    }
    return out;
  }

 private:
  static Status No() { return FailedPreconditionError("ssh-hosts machines exist already"); }
};

}  // namespace tpufleet::testing
