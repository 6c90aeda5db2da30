// SshHostsProvider: the `ssh-hosts` provider, for machines that exist already and that a
// fleet spec lists by address (NodeSpec::hosts, one host per worker).
//
// tpufleet never creates, deletes, stops or starts these machines: CreateNode, DeleteNode,
// StopNode, StartNode, DeleteQueuedResource and SetSshKeys are FailedPrecondition. What it can tell is whether
// they answer: GetNode probes every host of the node at once (ProbeSsh, no login) and
// reports "READY" when all greet, else "UNREACHABLE" with the silent workers named in
// `health`. Host keys come from the user's own known_hosts (hashed entries and
// "[host]:port" too), pinned when the user first connected; a host that is not there is
// reported with the key it offers, which up pins only once the user has confirmed its
// fingerprint: tpufleet never trusts a key on first use by itself. There are no zones, queued
// resources or operations: zone arguments are ignored and nodes have zone "".
//
// Thread-safety: immutable after construction; every method may be called from several
// threads at once.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "core/fleet_spec.h"
#include "provider/provider.h"

namespace tpufleet {

/// How long one host has to greet: an SSH server on a reachable machine answers in
/// milliseconds; 3 s allows a slow VPN without making `status` slow.
inline constexpr std::chrono::milliseconds kSshHostsProbeTimeout{3000};
/// Probes in flight at once (a thread each, for getaddrinfo blocks): enough that a
/// 256-worker fleet's silent hosts cost a few probe timeouts, not 256.
inline constexpr int kMaxConcurrentProbes = 32;

class SshHostsProvider final : public CloudProvider {
 public:
  /// `nodes`: the spec's NodeSpecs (ssh-hosts ones: hosts, ssh_user, port). `known_hosts`:
  /// where the user's pinned host keys are (the invoking user's, under sudo too); ""
  /// means ~/.ssh/known_hosts.
  explicit SshHostsProvider(std::vector<NodeSpec> nodes, std::string known_hosts = "",
                            std::chrono::milliseconds probe_timeout = kSshHostsProbeTimeout);

  std::string_view Name() const override { return "ssh-hosts"; }

  Result<CloudOperation> CreateNode(const CreateNodeRequest& request) override;
  Result<CloudOperation> DeleteNode(std::string_view zone, std::string_view node_id) override;
  Result<CloudOperation> StopNode(std::string_view zone, std::string_view node_id) override;
  Result<CloudOperation> StartNode(std::string_view zone, std::string_view node_id) override;
  Result<CloudOperation> DeleteQueuedResource(std::string_view zone, std::string_view id,
                                              bool force) override;
  Result<CloudOperation> SetSshKeys(std::string_view zone, std::string_view node_id,
                                    std::string_view ssh_keys) override;
  /// Always NotFound: nothing here is a long-running operation.
  Result<CloudOperation> GetOperation(std::string_view name) override;

  /// The node `node_id` of the spec, probed now. NotFound for a name the spec lacks.
  Result<CloudNode> GetNode(std::string_view zone, std::string_view node_id) override;
  /// Always NotFound.
  Result<CloudQueuedResource> GetQueuedResource(std::string_view zone,
                                                std::string_view id) override;
  /// Every node of the spec (whatever the zones), all hosts probed concurrently.
  Result<std::vector<CloudNode>> ListNodes(const std::vector<std::string>& zones) override;
  /// Always empty.
  Result<std::vector<CloudQueuedResource>> ListQueuedResources(
      const std::vector<std::string>& zones) override;
  /// Each host's key from known_hosts (ssh-ed25519 preferred when it has several); when
  /// it has none, host_key is empty and offered_host_key is what the host offers now
  /// (ssh-keyscan; empty when it does not answer). hostname is the host as the spec
  /// gives it.
  Result<std::vector<WorkerIdentity>> GetWorkerIdentities(std::string_view zone,
                                                          std::string_view node_id) override;

 private:
  const NodeSpec* Find(std::string_view node_id) const;
  /// The nodes, each with its probe results folded into state and health.
  std::vector<CloudNode> Probe(const std::vector<const NodeSpec*>& nodes) const;

  const std::vector<NodeSpec> nodes_;
  const std::string known_hosts_;
  const std::chrono::milliseconds probe_timeout_;
};

}  // namespace tpufleet
