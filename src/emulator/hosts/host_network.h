// HostNetwork: the machine's side of the worker network of one emulator.
//
// 198.18.0.0/15 is cut into kSlotCount slots (address_pool.h). An emulator claims a
// free slot by taking an flock on /run/tpufleet-emulator/slot<k>.lock, which the kernel
// drops when the process dies however it dies, so a slot whose lock is free belongs to
// nobody and anything left in it is garbage. In its slot an emulator has:
//   - the bridge `tpfbr<k>` with the slot's first address (198.18.<..>.1/18), through
//     which the machine reaches every worker and workers reach each other;
//   - one veth pair per worker: `tpf<k>v<n>` on the machine, enslaved to the bridge, and
//     `eth0` created directly inside the worker's network namespace. When a worker's
//     namespace dies the pair dies with it, so workers never leave veths behind.
// Nothing routes beyond the bridge: workers have no default route, and the machine
// does not forward what arrives on the bridge (IsolateBridge: the bridge's own IPv4
// forwarding off and IPv6 off, whatever net.ipv4.ip_forward says), so worker traffic
// stays between the workers and the machine, even when a worker's root adds routes.
//
// Links are made with `ip -batch` (one process for all the veths of a node) rather than
// hand-written netlink: a node of 256 workers costs one exec, a few milliseconds.
//
// Thread-safety: AddVeths/SetLinkUp/NewVethName may be called from several threads;
// pool() is not locked (the owner locks).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "emulator/hosts/address_pool.h"
#include "util/status.h"

namespace tpufleet::emulator::hosts {

/// Where the slot locks live: /run is a tmpfs cleared at boot, like the links they guard.
inline constexpr const char* kSlotLockDir = "/run/tpufleet-emulator";

/// Turns off IPv4 forwarding of packets that arrive on `bridge`
/// (/proc/sys/net/ipv4/conf/<bridge>/forwarding = 0) and IPv6 on it. Claim does this for
/// its bridge. FailedPrecondition when a setting cannot be made.
/// A later write of net.ipv4.conf.all.forwarding (some daemons do it at start) sets
/// every interface's forwarding again, so AddVeths repeats this at every boot.
Status IsolateBridge(const std::string& bridge);

class HostNetwork {
 public:
  /// Claims a free slot, deletes what a dead emulator left in it, and creates its
  /// bridge. FailedPrecondition when every slot is taken or `ip` is missing.
  static Result<std::unique_ptr<HostNetwork>> Claim();

  /// Deletes the bridge (the veths are gone with their namespaces) and frees the slot.
  ~HostNetwork();
  HostNetwork(const HostNetwork&) = delete;
  HostNetwork& operator=(const HostNetwork&) = delete;

  int slot() const { return slot_; }
  const std::string& bridge() const { return bridge_; }
  AddressPool& pool() { return pool_; }

  /// A veth name not used before by this emulator: "tpf0v17" (≤ 15 bytes, IFNAMSIZ).
  std::string NewVethName();

  struct Veth {
    std::string name;  // the machine's end, from NewVethName
    pid_t netns_pid;   // a process in the worker's network namespace (its init)
    bool up = true;    // false leaves the worker cut off
  };
  /// Creates each pair: `name` on the bridge, its peer `eth0` inside the namespace;
  /// then IsolateBridge again.
  Status AddVeths(const std::vector<Veth>& veths);

  /// Brings the machine's end of a worker's veth up or down (cut off).
  Status SetLinkUp(const std::string& veth, bool up);

  static std::string BridgeName(int slot);
  static std::string VethPrefix(int slot);

  /// Deletes the bridge and veths of every slot that no live emulator holds.
  static Status CleanStaleSlots();

  /// The names of this machine's network links (from /sys/class/net).
  static std::vector<std::string> ListLinks();

 private:
  HostNetwork(int slot, int lock_fd, std::string ip);

  int slot_;
  int lock_fd_;
  std::string ip_;  // path of ip(8)
  std::string bridge_;
  AddressPool pool_;
  std::atomic<uint64_t> next_veth_{0};
};

}  // namespace tpufleet::emulator::hosts
