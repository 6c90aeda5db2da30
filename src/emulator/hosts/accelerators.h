// Emulated TPU chips on a worker: what a TPU VM of the node's family shows of them, so
// that tools which find chips without libtpu (tpu-info, the node agent) find them here.
//
// Inside the worker (and only there: the mounts are in its mount namespace, nothing on
// the machine changes):
//   - /sys/bus/pci/devices is a small tmpfs, read-only to the worker, holding one
//     directory per PCI function, 0000:00:04.0, 0000:00:05.0, … (slot 4 + chip, the
//     function number the TensorCore on 7x), with the files `vendor` (0x1ae0, Google),
//     `device` (the family's id), `subsystem_vendor`, `subsystem_device` (v2 and v3
//     only: it tells them apart), `class` (0x120000, processing accelerator) and, on
//     the VFIO families (v5e and later), an `iommu_group` link whose last part is the
//     group, N (it points at /sys/kernel/iommu_groups/N, which only a machine with an
//     IOMMU has: read the link, do not resolve it, as tpu-info does). The machine's own
//     PCI devices are not shown.
//   - /dev/accelN (v2, v3, v4) or /dev/vfio/N plus /dev/vfio/vfio (v5e and later),
//     character devices 0666 with /dev/null's numbers (1:3): opening one works, and
//     /proc/PID/fd shows the path, which is how holders are found. No kernel driver
//     stands behind them: the VFIO "one open file per group" rule is not the kernel's
//     here; the stand-in program (emulator/standin) enforces it with a lock on the node.
//
// A removed chip (the `device` fault) has neither its sysfs directory nor its node
// until the fault ends. The init holds writable clones of both mounts (open_tree), so it
// can change them after it has given up the right to mount; making a node again needs
// CAP_MKNOD, which the init alone keeps (permitted, raised only for the call).
//
// Thread-safety: a WorkerAccelerators belongs to the single-threaded init.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "util/status.h"
#include "util/unique_fd.h"

namespace tpufleet::emulator::hosts {

/// Google's PCI vendor id, as sysfs writes it.
inline constexpr std::string_view kGoogleVendor = "0x1ae0";
/// The first PCI slot of a worker's chips: TPU VMs show them at 0000:00:04.0 on.
inline constexpr int kFirstChipSlot = 4;
/// The most chips a worker shows: TPU VMs have up to 8; a bus has 32 slots.
inline constexpr int kMaxChipsPerWorker = 16;

/// How one family's chips look on a host (reference/monitoring.md §2).
struct AcceleratorFamilyIds {
  std::string_view family;            // catalog family: "v4", "v5litepod"
  std::string_view device;            // PCI device id: "0x005e"
  std::string_view subsystem_device;  // "" when the family is told apart by device alone
  bool vfio = false;                  // /dev/vfio/N (v5e and later) rather than /dev/accelN
  int functions_per_chip = 1;         // 2 on 7x: one per TensorCore
  int hbm_gib = 0;                    // HBM per chip (tpu-info's hbm_gib x devices per chip)
};

/// The ids of `family`, or nullptr for a family without a known PCI id.
const AcceleratorFamilyIds* FindAcceleratorFamily(std::string_view family);
/// The family whose chips have PCI `device` (and `subsystem_device`, where that tells
/// them apart), as sysfs writes them ("0x005e"); nullptr when none has.
const AcceleratorFamilyIds* FindAcceleratorByPci(std::string_view device,
                                                 std::string_view subsystem_device);

/// What the worker document says of a worker's chips.
struct AcceleratorSpec {
  std::string family;  // "" or unknown: no chips shown
  int chips = 0;       // chips on this worker (the type's chips per worker)
  std::set<int> removed;  // chips taken away by a `device` fault
};

/// "0000:00:04.0": the PCI address of function `function` of chip `chip`.
std::string ChipPciAddress(int chip, int function);
/// "/dev/accel0" or "/dev/vfio/0": the node a framework opens for chip `chip`.
std::string ChipDeviceNode(const AcceleratorFamilyIds& ids, int chip);

/// The chips of one worker, as its init shows them.
class WorkerAccelerators {
 public:
  /// Mounts the sysfs tmpfs (where the machine has /sys/bus/pci; else only the nodes
  /// are made, and the log says so), makes the directories and nodes of every chip not in
  /// spec.removed, and keeps the writable clones. Says (worker log) and shows no chips
  /// for an unknown family. REQUIRES: run by the init in the worker's mount namespace
  /// after /dev and /sys are mounted and before the mounts are locked down, with
  /// CAP_SYS_ADMIN and CAP_MKNOD.
  Status SetUp(const AcceleratorSpec& spec);

  /// Shows exactly the chips not in `removed`: takes away the others' directories and
  /// nodes, puts back those no longer removed. REQUIRES: SetUp ran; CAP_MKNOD permitted.
  Status Apply(const std::set<int>& removed);

 private:
  Status Show(int chip);
  Status Hide(int chip);

  const AcceleratorFamilyIds* ids_ = nullptr;
  int chips_ = 0;
  std::set<int> removed_;
  UniqueFd sys_;  // writable clone of the tmpfs at /sys/bus/pci/devices
  UniqueFd dev_;  // writable clone of the worker's /dev
};

}  // namespace tpufleet::emulator::hosts
