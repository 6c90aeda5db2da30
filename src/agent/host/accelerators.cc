#include "agent/host/accelerators.h"

#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "util/file.h"
#include "util/strings.h"

namespace tpufleet::agent::host {
namespace {

struct TpuId {
  std::string_view device;
  std::string_view subsystem;  // "" matches any
  std::string_view family;
  bool vfio;  // node /dev/vfio/GROUP, else /dev/accelN
};

constexpr TpuId kTpuIds[] = {
    {"0x0027", "0x004e", "v2", false},       {"0x0027", "0x004f", "v3", false},
    {"0x005e", "", "v4", false},             {"0x0063", "", "v5litepod", true},
    {"0x0062", "", "v5p", true},             {"0x006f", "", "v6e", true},
    {"0x0076", "", "tpu7x", true},
};

const TpuId* FindTpuId(std::string_view device, std::string_view subsystem) {
  for (const TpuId& id : kTpuIds) {
    if (id.device == device && (id.subsystem.empty() || id.subsystem == subsystem)) {
      return &id;
    }
  }
  return nullptr;
}

// A small sysfs attribute, trimmed and lower-cased ("0x1AE0\n" -> "0x1ae0").
std::string Attribute(const std::string& dir, const char* name) {
  Result<std::string> text = ReadFile(dir + "/" + name, 64);
  return text.ok() ? AsciiLower(Trim(*text)) : std::string();
}

// The last component of what the symlink `path` points to; "" when it is none.
std::string LinkBaseName(const std::string& path) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  if (n <= 0) {
    return "";
  }
  std::string target(buf, static_cast<size_t>(n));
  return target.substr(target.find_last_of('/') + 1);
}

// "accelN" from the device's accel/ class directory, when sysfs has one.
std::string AccelClassName(const std::string& dir) {
  for (const std::string& name : ListDirectory(dir + "/accel")) {
    if (StartsWith(name, "accel")) {
      return name;
    }
  }
  return "";
}

}  // namespace

std::string TpuFamily(std::string_view device_id, std::string_view subsystem_device) {
  const TpuId* id = FindTpuId(device_id, subsystem_device);
  return id != nullptr ? std::string(id->family) : std::string();
}

std::vector<Accelerator> ScanAccelerators(const HostPaths& paths) {
  const std::string devices = paths.sys + "/bus/pci/devices";
  std::vector<std::string> addresses = ListDirectory(devices);
  std::sort(addresses.begin(), addresses.end());
  std::vector<Accelerator> out;
  int accel_count = 0;
  for (const std::string& address : addresses) {
    const std::string dir = devices + "/" + address;
    if (Attribute(dir, "vendor") != kGoogleVendorId) {
      continue;
    }
    const std::string device = Attribute(dir, "device");
    const TpuId* id = FindTpuId(device, Attribute(dir, "subsystem_device"));
    if (id == nullptr) {
      continue;
    }
    Accelerator a{static_cast<int>(out.size()), address, std::string(id->family), device, ""};
    if (id->vfio) {
      std::string group = LinkBaseName(dir + "/iommu_group");
      a.path = group.empty() ? "" : paths.dev + "/vfio/" + group;
    } else {
      std::string name = AccelClassName(dir);
      a.path = paths.dev + "/" + (name.empty() ? "accel" + std::to_string(accel_count) : name);
      ++accel_count;
    }
    out.push_back(std::move(a));
  }
  return out;
}

int ChipCount(const std::vector<Accelerator>& accelerators) {
  std::set<std::string> slots;
  for (const Accelerator& a : accelerators) {
    slots.insert(a.pci_address.substr(0, a.pci_address.rfind('.')));  // drop the function
  }
  return static_cast<int>(slots.size());
}

}  // namespace tpufleet::agent::host
