#include "emulator/hosts/host_network.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "emulator/hosts/system_programs.h"
#include "util/file.h"
#include "util/log.h"
#include "util/strings.h"

namespace tpufleet::emulator::hosts {
namespace {

// Opens (creating) and try-locks slot k's lock file. The fd, or -1 when another live
// emulator holds the slot.
Result<int> TryLockSlot(int slot) {
  if (::mkdir(kSlotLockDir, 0755) != 0 && errno != EEXIST) {
    return FailedPreconditionError(std::string(kSlotLockDir) + ": " + std::strerror(errno));
  }
  std::string path = std::string(kSlotLockDir) + "/slot" + std::to_string(slot) + ".lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return FailedPreconditionError(path + ": " + std::strerror(errno));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Deletes slot k's links (the caller holds the slot's lock).
Status DeleteSlotLinks(const std::string& ip, int slot) {
  std::string batch;
  std::string bridge = HostNetwork::BridgeName(slot);
  std::string prefix = HostNetwork::VethPrefix(slot);
  for (const std::string& link : HostNetwork::ListLinks()) {
    if (link == bridge || StartsWith(link, prefix)) {
      batch += "link del " + link + "\n";
    }
  }
  if (batch.empty()) {
    return Status::Ok();
  }
  // -force: keep going when a veth vanished meanwhile (its namespace just died).
  TPUFLEET_ASSIGN_OR_RETURN(ProgramResult r, RunCommand({ip, "-force", "-batch", "-"}, batch));
  for (const std::string& link : HostNetwork::ListLinks()) {
    if (link == bridge || StartsWith(link, prefix)) {
      return InternalError("could not delete " + link + ": " + std::string(Trim(r.output)));
    }
  }
  return Status::Ok();
}

// Writes `value` to the sysctl file `path` in place (no temporary files in /proc); OK
// too when it cannot be written but already holds `value`.
Status WriteSysctl(const std::string& path, const std::string& value) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  bool wrote = false;
  if (fd >= 0) {
    std::string line = value + "\n";
    wrote = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    ::close(fd);
  }
  if (wrote) {
    return Status::Ok();
  }
  int err = errno;
  Result<std::string> have = ReadFile(path);
  if (have.ok() && Trim(*have) == value) {
    return Status::Ok();
  }
  return FailedPreconditionError("cannot set " + path + " to " + value + ": " +
                                 std::strerror(err));
}

}  // namespace

Status IsolateBridge(const std::string& bridge) {
  // A machine that routes (ip_forward=1, as with Docker) would otherwise forward what a
  // worker's root sends to an outside address via the bridge: the per-interface
  // setting stops packets that arrive on the bridge from being routed anywhere.
  TPUFLEET_TRY(WriteSysctl("/proc/sys/net/ipv4/conf/" + bridge + "/forwarding", "0"));
  // IPv6 has no per-interface forwarding switch; without IPv6 on the bridge, what
  // arrives there over IPv6 is dropped. (Workers turn IPv6 off too, but their root can
  // turn it back on.)
  return WriteSysctl("/proc/sys/net/ipv6/conf/" + bridge + "/disable_ipv6", "1");
}

std::string HostNetwork::BridgeName(int slot) {
  return "tpfbr" + std::to_string(slot);
}
std::string HostNetwork::VethPrefix(int slot) {
  return "tpf" + std::to_string(slot) + "v";
}

std::vector<std::string> HostNetwork::ListLinks() {
  std::vector<std::string> out;
  DIR* d = ::opendir("/sys/class/net");
  if (d == nullptr) {
    return out;
  }
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') {
      out.emplace_back(e->d_name);
    }
  }
  ::closedir(d);
  return out;
}

HostNetwork::HostNetwork(int slot, int lock_fd, std::string ip)
    : slot_(slot), lock_fd_(lock_fd), ip_(std::move(ip)), bridge_(BridgeName(slot)), pool_(slot) {}

Result<std::unique_ptr<HostNetwork>> HostNetwork::Claim() {
  TPUFLEET_ASSIGN_OR_RETURN(std::string ip, FindProgram("ip", "iproute2"));
  for (int slot = 0; slot < kSlotCount; ++slot) {
    TPUFLEET_ASSIGN_OR_RETURN(int fd, TryLockSlot(slot));
    if (fd < 0) {
      continue;
    }
    std::unique_ptr<HostNetwork> net(new HostNetwork(slot, fd, ip));
    TPUFLEET_TRY(DeleteSlotLinks(ip, slot));
    AddressPool& pool = net->pool_;
    std::string batch = "link add " + net->bridge_ + " type bridge\n" + "addr add " +
                        FormatIpv4(pool.gateway()) + "/" + std::to_string(pool.prefix_length()) +
                        " dev " + net->bridge_ + "\n" + "link set " + net->bridge_ + " up\n";
    Status s = RunChecked({ip, "-batch", "-"}, batch);
    if (!s.ok()) {
      return s.WithContext("creating the worker bridge " + net->bridge_);
    }
    TPUFLEET_TRY(IsolateBridge(net->bridge_));
    return net;
  }
  return FailedPreconditionError("every one of the " + std::to_string(kSlotCount) +
                                 " worker-network slots of this machine is held by a running "
                                 "emulator (locks in " +
                                 kSlotLockDir + ")");
}

HostNetwork::~HostNetwork() {
  Status s = DeleteSlotLinks(ip_, slot_);
  if (!s.ok()) {
    Log(LogLevel::kWarn, "emulator hosts: " + s.ToString());
  }
  ::close(lock_fd_);  // frees the slot
}

std::string HostNetwork::NewVethName() {
  return VethPrefix(slot_) + std::to_string(next_veth_.fetch_add(1));
}

Status HostNetwork::AddVeths(const std::vector<Veth>& veths) {
  if (veths.empty()) {
    return Status::Ok();
  }
  std::string batch;
  for (const Veth& v : veths) {
    batch += "link add " + v.name + " type veth peer name eth0 netns " +
             std::to_string(v.netns_pid) + "\n";
    batch += "link set " + v.name + " master " + bridge_ + (v.up ? " up\n" : "\n");
  }
  Status s = RunChecked({ip_, "-batch", "-"}, batch);
  if (!s.ok()) {
    return s.WithContext("creating worker veths");
  }
  // Again at every boot: a write of net.ipv4.conf.all.forwarding since (a daemon that
  // started meanwhile) set every interface's forwarding back on.
  return IsolateBridge(bridge_);
}

Status HostNetwork::SetLinkUp(const std::string& veth, bool up) {
  return RunChecked({ip_, "link", "set", "dev", veth, up ? "up" : "down"});
}

Status HostNetwork::CleanStaleSlots() {
  Result<std::string> ip = FindProgram("ip", "iproute2");
  if (!ip.ok()) {
    return ip.status();
  }
  for (int slot = 0; slot < kSlotCount; ++slot) {
    TPUFLEET_ASSIGN_OR_RETURN(int fd, TryLockSlot(slot));
    if (fd < 0) {
      continue;  // a live emulator's
    }
    Status s = DeleteSlotLinks(*ip, slot);
    ::close(fd);
    TPUFLEET_TRY(s);
  }
  return Status::Ok();
}

}  // namespace tpufleet::emulator::hosts
