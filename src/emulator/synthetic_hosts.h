// SyntheticHosts: WorkerHosts without machines. Boot hands out addresses from
// 198.18.0.0/15 (the benchmarking range: never a real network), hostnames shaped like
// a TPU VM's ("t1v-n-1a2b3c4d-w-0") and well-formed ssh-ed25519 host keys, at once;
// every other call only updates its bookkeeping.
//
// The ApiServer uses it when it is given no WorkerHosts ("API-only" mode: the API
// behaves fully, but nothing answers on the addresses), for example where the real
// namespace hosts cannot be made (not root). The test fake builds on it.
//
// Thread-safety: every method may be called from any thread (internal mutex).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "emulator/worker_hosts.h"

namespace tpufleet::emulator {

class SyntheticHosts : public WorkerHosts {
 public:
  explicit SyntheticHosts(uint64_t seed = 1) : rng_(seed) {}

  Result<std::vector<WorkerInfo>> Boot(const NodeHostSpec& node, bool new_addresses) override;
  Status SetMetadata(const std::string& node,
                     const std::map<std::string, std::string>& metadata) override;
  Status SetProjectMetadata(const std::string& project,
                            const std::map<std::string, std::string>& metadata) override;
  Status Notify(const std::string& node, HostEvent event) override;
  Status Halt(const std::string& node) override;
  Status SetDataDisks(const std::string& node, const std::vector<AttachedDiskSpec>& disks) override;
  Status SetCutOff(const std::string& node, int worker, bool cut) override;
  Status SetDeviceRemoved(const std::string& node, int worker, int device, bool removed) override;
  Status Destroy(const std::string& node) override;

  /// "198.18.0.1" for n = 0, then onwards through 198.19.255.254, skipping .0 and .255.
  static std::string AddressFor(uint32_t n);

 protected:
  struct NodeHosts {
    std::vector<WorkerInfo> workers;
    std::map<std::string, std::string> metadata;
    bool running = false;
  };
  std::mutex mu_;
  std::map<std::string, NodeHosts> nodes_;  // guarded by mu_
  // Project metadata by project id; guarded by mu_.
  std::map<std::string, std::map<std::string, std::string>> project_metadata_;

 private:
  std::string NewHostKey();  // REQUIRES: mu_ held

  std::mt19937_64 rng_;        // guarded by mu_
  uint32_t next_address_ = 0;  // guarded by mu_
};

}  // namespace tpufleet::emulator
