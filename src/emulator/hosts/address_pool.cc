#include "emulator/hosts/address_pool.h"

namespace tpufleet::emulator::hosts {

std::string FormatIpv4(uint32_t a) {
  return std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 0xff) + "." +
         std::to_string((a >> 8) & 0xff) + "." + std::to_string(a & 0xff);
}

AddressPool::AddressPool(int slot)
    : network_(kWorkerRangeBase + (static_cast<uint32_t>(slot) << (32 - kSlotPrefixLength))),
      size_(1u << (32 - kSlotPrefixLength)),
      next_(2) {}

bool AddressPool::Usable(uint32_t address) const {
  uint32_t offset = address - network_;
  uint32_t last_octet = address & 0xff;
  return offset >= 2 && offset < size_ - 1 && last_octet != 0 && last_octet != 255 &&
         used_.count(address) == 0;
}

Result<uint32_t> AddressPool::Allocate() {
  for (uint32_t tried = 0; tried < size_; ++tried) {
    uint32_t offset = next_;
    next_ = next_ + 1 >= size_ ? 2 : next_ + 1;
    uint32_t address = network_ + offset;
    if (Usable(address)) {
      used_.insert(address);
      return address;
    }
  }
  return FailedPreconditionError("no free worker address left in " + FormatIpv4(network_) + "/" +
                                 std::to_string(kSlotPrefixLength));
}

void AddressPool::Release(uint32_t address) {
  used_.erase(address);
}

}  // namespace tpufleet::emulator::hosts
