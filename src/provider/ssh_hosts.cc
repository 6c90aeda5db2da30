#include "provider/ssh_hosts.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>

#include "ssh/runner.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

Status Refused() {
  return FailedPreconditionError(
      "ssh-hosts machines exist already; tpufleet never creates or deletes them");
}

}  // namespace

SshHostsProvider::SshHostsProvider(std::vector<NodeSpec> nodes, std::string known_hosts,
                                   std::chrono::milliseconds probe_timeout)
    : nodes_(std::move(nodes)),
      known_hosts_(std::move(known_hosts)),
      probe_timeout_(probe_timeout) {}

Result<CloudOperation> SshHostsProvider::CreateNode(const CreateNodeRequest&) {
  return Refused();
}

Result<CloudOperation> SshHostsProvider::DeleteNode(std::string_view, std::string_view) {
  return Refused();
}

Result<CloudOperation> SshHostsProvider::StopNode(std::string_view, std::string_view) {
  return FailedPreconditionError("ssh-hosts nodes are not stopped by tpufleet");
}

Result<CloudOperation> SshHostsProvider::StartNode(std::string_view, std::string_view) {
  return FailedPreconditionError("ssh-hosts nodes are not started by tpufleet");
}

Result<CloudOperation> SshHostsProvider::DeleteQueuedResource(std::string_view, std::string_view,
                                                              bool) {
  return Refused();
}

Result<CloudOperation> SshHostsProvider::SetSshKeys(std::string_view, std::string_view,
                                                    std::string_view) {
  return Refused();
}

Result<CloudOperation> SshHostsProvider::GetOperation(std::string_view name) {
  return NotFoundError("ssh-hosts has no operations (asked for " + std::string(name) + ")");
}

Result<CloudNode> SshHostsProvider::GetNode(std::string_view, std::string_view node_id) {
  const NodeSpec* node = Find(node_id);
  if (node == nullptr) {
    return NotFoundError("no node " + std::string(node_id) + " among the ssh-hosts of the spec");
  }
  return std::move(Probe({node}).front());
}

Result<CloudQueuedResource> SshHostsProvider::GetQueuedResource(std::string_view,
                                                                std::string_view id) {
  return NotFoundError("ssh-hosts has no queued resources (asked for " + std::string(id) + ")");
}

Result<std::vector<CloudNode>> SshHostsProvider::ListNodes(const std::vector<std::string>&) {
  std::vector<const NodeSpec*> all;
  for (const NodeSpec& n : nodes_) {
    all.push_back(&n);
  }
  return Probe(all);
}

Result<std::vector<CloudQueuedResource>> SshHostsProvider::ListQueuedResources(
    const std::vector<std::string>&) {
  return std::vector<CloudQueuedResource>{};
}

Result<std::vector<WorkerIdentity>> SshHostsProvider::GetWorkerIdentities(
    std::string_view, std::string_view node_id) {
  const NodeSpec* node = Find(node_id);
  if (node == nullptr) {
    return NotFoundError("no node " + std::string(node_id) + " among the ssh-hosts of the spec");
  }
  std::vector<WorkerIdentity> ids;
  for (size_t i = 0; i < node->hosts.size(); ++i) {
    WorkerIdentity id;
    id.index = static_cast<int>(i);
    id.hostname = node->hosts[i];
    Result<std::vector<std::string>> keys = KnownHostKeys(node->hosts[i], node->port, known_hosts_);
    if (keys.ok()) {
      id.host_key = PreferredHostKey(*keys);
    } else if (keys.status().code() != StatusCode::kNotFound) {
      return keys.status();
    } else if (Result<std::vector<std::string>> offered = ScanHostKeys(node->hosts[i], node->port);
               offered.ok()) {
      id.offered_host_key = PreferredHostKey(*offered);  // for the user to confirm
    }
    ids.push_back(std::move(id));
  }
  return ids;
}

const NodeSpec* SshHostsProvider::Find(std::string_view node_id) const {
  auto it = std::ranges::find(nodes_, node_id, &NodeSpec::name);
  return it == nodes_.end() ? nullptr : &*it;
}

std::vector<CloudNode> SshHostsProvider::Probe(const std::vector<const NodeSpec*>& nodes) const {
  // Every (node, host) pair is one probe; a few threads take them in turn.
  std::vector<std::pair<size_t, size_t>> work;
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (size_t h = 0; h < nodes[n]->hosts.size(); ++h) {
      work.emplace_back(n, h);
    }
  }
  std::vector<Status> results(work.size());
  std::atomic<size_t> next{0};
  auto prober = [&] {
    for (size_t i = next++; i < work.size(); i = next++) {
      const NodeSpec& node = *nodes[work[i].first];
      results[i] = ProbeSsh(node.hosts[work[i].second], node.port, probe_timeout_);
    }
  };
  std::vector<std::thread> threads;
  size_t count = std::min(work.size(), static_cast<size_t>(kMaxConcurrentProbes));
  for (size_t t = 1; t < count; ++t) {
    threads.emplace_back(prober);
  }
  prober();  // this thread is one of them
  for (std::thread& t : threads) {
    t.join();
  }

  std::vector<CloudNode> out;
  for (const NodeSpec* spec : nodes) {
    CloudNode node;
    node.id = spec->name;
    node.cloud_name = "ssh-hosts/" + spec->name;
    for (size_t h = 0; h < spec->hosts.size(); ++h) {
      node.workers.push_back(CloudWorker{static_cast<int>(h), spec->hosts[h], ""});
    }
    out.push_back(std::move(node));
  }
  std::vector<std::vector<std::string>> silent(nodes.size());
  for (size_t i = 0; i < work.size(); ++i) {
    if (!results[i].ok()) {
      silent[work[i].first].push_back("worker " + std::to_string(work[i].second) + ": " +
                                      results[i].message());
    }
  }
  for (size_t n = 0; n < out.size(); ++n) {
    out[n].state = silent[n].empty() ? NodeState::kReady : NodeState::kUnreachable;
    out[n].health = Join(silent[n], "; ");
  }
  return out;
}

}  // namespace tpufleet
