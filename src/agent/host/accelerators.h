// The TPU chips of this host, found the way tpu-info finds them (sysfs only, no libtpu;
// reference/monitoring.md §2): every entry of sys/bus/pci/devices whose `vendor` is
// Google's 0x1ae0 and whose `device` (and, for v2/v3, `subsystem_device`) is a TPU in
// the table below. Google's other PCI functions (gVNIC is 0x1ae0:0x0042) are not TPUs
// and are skipped.
//
//   | family    | device | subsystem | node        |
//   |-----------|--------|-----------|-------------|
//   | v2        | 0x0027 | 0x004e    | /dev/accelN |
//   | v3        | 0x0027 | 0x004f    | /dev/accelN |
//   | v4        | 0x005e |           | /dev/accelN |
//   | v5litepod | 0x0063 |           | /dev/vfio/N |
//   | v5p       | 0x0062 |           | /dev/vfio/N |
//   | v6e       | 0x006f |           | /dev/vfio/N |
//   | tpu7x     | 0x0076 |           | /dev/vfio/N |
//
// Family names are the catalog's (core/catalog.h). The device node of an accel family
// is the accel/accelN entry below the PCI device when sysfs has one, else /dev/accelN
// with N the device's position among this host's accel devices in PCI address order
// (how the driver numbers them). A VFIO family's node is /dev/vfio/G where G is the
// name of the device's iommu_group link target: never an index, the groups need not
// start at 0. A device whose node cannot be told gets an empty path.
//
// A tpu7x chip shows two PCI functions (one per core), so chips are counted by PCI slot
// (domain:bus:device), not by function.
//
// Thread-safety: stateless.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "agent/host/host_paths.h"

namespace tpufleet::agent::host {

/// Google's PCI vendor id.
inline constexpr std::string_view kGoogleVendorId = "0x1ae0";

/// One TPU PCI function.
struct Accelerator {
  int index = 0;            // position in this host's list, 0 up, in PCI address order
  std::string pci_address;  // "0000:00:04.0"
  std::string family;       // "v4", "v5litepod", …
  std::string device_id;    // "0x005e"
  std::string path;         // the device node, under HostPaths::dev; "" when unknown
};

/// The family of a Google PCI function, "" when it is no TPU.
std::string TpuFamily(std::string_view device_id, std::string_view subsystem_device);

/// Every TPU function under paths.sys, in PCI address order. Empty on a host without
/// TPUs (or without sysfs).
std::vector<Accelerator> ScanAccelerators(const HostPaths& paths);

/// The number of chips among `accelerators`: distinct PCI slots.
int ChipCount(const std::vector<Accelerator>& accelerators);

}  // namespace tpufleet::agent::host
