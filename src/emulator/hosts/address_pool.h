// AddressPool: the IPv4 addresses one emulator hands to its workers.
//
// An emulator owns one slot of 198.18.0.0/15 (the benchmarking range of RFC 2544, never
// a real network): a /18 whose first address is its bridge. Workers get the others,
// skipping addresses whose last octet is 0 or 255 (some tools treat those as network or
// broadcast addresses even inside a larger subnet) and the subnet's broadcast address.
// Allocation walks forward from the last address handed out, so an address freed by a
// worker that moved (maintenance) is not handed back at once, and a worker that asks
// for a new address always gets a different one.
//
// Thread-safety: none; the owner locks.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "util/status.h"

namespace tpufleet::emulator::hosts {

/// 198.18.0.0/15 and how it is cut into emulator slots.
inline constexpr uint32_t kWorkerRangeBase = (198u << 24) | (18u << 16);
inline constexpr int kSlotPrefixLength = 18;
/// /15 cut into /18s: up to 8 emulators on one machine, 16 000 workers each.
inline constexpr int kSlotCount = 8;

/// "198.18.0.7".
std::string FormatIpv4(uint32_t address);

class AddressPool {
 public:
  /// The pool of slot `slot` (0 ≤ slot < kSlotCount).
  explicit AddressPool(int slot);

  uint32_t network() const { return network_; }
  /// The bridge's address: the first of the slot.
  uint32_t gateway() const { return network_ + 1; }
  int prefix_length() const { return kSlotPrefixLength; }

  /// A free address, marked used. FailedPrecondition when the slot is full.
  Result<uint32_t> Allocate();
  /// Marks `address` free again (no-op when it was not in use).
  void Release(uint32_t address);
  size_t in_use() const { return used_.size(); }

 private:
  bool Usable(uint32_t address) const;

  uint32_t network_;
  uint32_t size_;
  uint32_t next_;  // offset tried first by the next Allocate
  std::set<uint32_t> used_;
};

}  // namespace tpufleet::emulator::hosts
