#include "emulator/synthetic_hosts.h"

#include "emulator/wire.h"
#include "util/encoding.h"

namespace tpufleet::emulator {

std::string SyntheticHosts::AddressFor(uint32_t n) {
  // 254 usable host numbers per /24 (skip .0 and .255), 512 /24s in the /15.
  uint32_t block = (n / 254) % 512;
  uint32_t host = n % 254 + 1;
  return "198." + std::to_string(18 + block / 256) + "." + std::to_string(block % 256) + "." +
         std::to_string(host);
}

std::string SyntheticHosts::NewHostKey() {
  // The OpenSSH wire form of an ed25519 public key: string "ssh-ed25519", string key.
  std::string blob = std::string("\0\0\0\x0bssh-ed25519\0\0\0\x20", 19);
  for (int i = 0; i < 4; ++i) {
    uint64_t r = rng_();
    for (int b = 0; b < 8; ++b) {
      blob += static_cast<char>((r >> (8 * b)) & 0xff);
    }
  }
  return "ssh-ed25519 " + Base64Encode(blob);
}

Result<std::vector<WorkerInfo>> SyntheticHosts::Boot(const NodeHostSpec& node, bool new_addresses) {
  std::lock_guard<std::mutex> l(mu_);
  NodeHosts& n = nodes_[node.name];
  n.metadata = node.metadata;
  bool fresh = n.workers.size() != static_cast<size_t>(node.workers);
  if (fresh) {
    n.workers.clear();
    uint64_t id_bits = std::hash<std::string>{}(node.id);
    for (int i = 0; i < node.workers; ++i) {
      WorkerInfo w;
      w.address = AddressFor(next_address_++);
      w.hostname = "t1v-n-" + Hex(id_bits, 8) + "-w-" + std::to_string(i);
      w.host_key = NewHostKey();
      n.workers.push_back(std::move(w));
    }
  } else if (new_addresses) {
    for (WorkerInfo& w : n.workers) {
      w.address = AddressFor(next_address_++);
    }
  }
  n.running = true;
  return n.workers;
}

Status SyntheticHosts::SetMetadata(const std::string& node,
                                   const std::map<std::string, std::string>& metadata) {
  std::lock_guard<std::mutex> l(mu_);
  nodes_[node].metadata = metadata;
  return Status::Ok();
}

Status SyntheticHosts::SetProjectMetadata(const std::string& project,
                                          const std::map<std::string, std::string>& metadata) {
  std::lock_guard<std::mutex> l(mu_);
  project_metadata_[project] = metadata;
  return Status::Ok();
}

Status SyntheticHosts::Notify(const std::string&, HostEvent) {
  return Status::Ok();
}

Status SyntheticHosts::Halt(const std::string& node) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = nodes_.find(node);
  if (it != nodes_.end()) {
    it->second.running = false;
  }
  return Status::Ok();
}

Status SyntheticHosts::SetCutOff(const std::string&, int, bool) {
  return Status::Ok();
}

Status SyntheticHosts::SetDataDisks(const std::string&, const std::vector<AttachedDiskSpec>&) {
  return Status::Ok();
}

Status SyntheticHosts::SetDeviceRemoved(const std::string&, int, int, bool) {
  return Status::Ok();
}

Status SyntheticHosts::Destroy(const std::string& node) {
  std::lock_guard<std::mutex> l(mu_);
  nodes_.erase(node);
  return Status::Ok();
}

}  // namespace tpufleet::emulator
