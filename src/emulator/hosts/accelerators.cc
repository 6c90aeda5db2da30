#include "emulator/hosts/accelerators.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "emulator/hosts/system_programs.h"
#include "emulator/hosts/worker_setup.h"

namespace tpufleet::emulator::hosts {
namespace {

// reference/monitoring.md §2 (tpu-info's table), by catalog family.
constexpr AcceleratorFamilyIds kFamilies[] = {
    {"v2", "0x0027", "0x004e", false, 1, 16},   {"v3", "0x0027", "0x004f", false, 1, 32},
    {"v4", "0x005e", "", false, 1, 32},         {"v5litepod", "0x0063", "", true, 1, 16},
    {"v5p", "0x0062", "", true, 1, 95},         {"v6e", "0x006f", "", true, 1, 32},
    {"tpu7x", "0x0076", "", true, 2, 192},
};

constexpr const char* kPciDevices = "/sys/bus/pci/devices";
// The files of one function's directory (iommu_group is a link).
constexpr const char* kPciFiles[] = {"vendor", "device", "subsystem_vendor", "subsystem_device",
                                     "class", "iommu_group"};

Status WriteAt(int dir, const std::string& path, std::string_view text) {
  int fd = ::openat(dir, path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0444);
  if (fd < 0) {
    return InternalError(Errno("create " + path));
  }
  std::string line = std::string(text) + "\n";
  bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  return ok ? Status::Ok() : InternalError(Errno("write " + path));
}

// "accel0" or "vfio/0": the node's path below /dev.
std::string NodeBelowDev(const AcceleratorFamilyIds& ids, int chip) {
  return ChipDeviceNode(ids, chip).substr(5);
}

}  // namespace

const AcceleratorFamilyIds* FindAcceleratorFamily(std::string_view family) {
  for (const AcceleratorFamilyIds& f : kFamilies) {
    if (f.family == family) {
      return &f;
    }
  }
  return nullptr;
}

const AcceleratorFamilyIds* FindAcceleratorByPci(std::string_view device,
                                                 std::string_view subsystem_device) {
  for (const AcceleratorFamilyIds& f : kFamilies) {
    if (f.device == device &&
        (f.subsystem_device.empty() || f.subsystem_device == subsystem_device)) {
      return &f;
    }
  }
  return nullptr;
}

std::string ChipPciAddress(int chip, int function) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0000:00:%02x.%d", kFirstChipSlot + chip, function);
  return buf;
}

std::string ChipDeviceNode(const AcceleratorFamilyIds& ids, int chip) {
  return (ids.vfio ? "/dev/vfio/" : "/dev/accel") + std::to_string(chip);
}

Status WorkerAccelerators::SetUp(const AcceleratorSpec& spec) {
  ids_ = FindAcceleratorFamily(spec.family);
  if (ids_ == nullptr || spec.chips <= 0) {
    if (!spec.family.empty()) {
      Say("no PCI id known for the family \"" + spec.family + "\": this worker shows no chips");
    }
    ids_ = nullptr;
    return Status::Ok();
  }
  chips_ = spec.chips;
  struct stat st;
  if (::stat(kPciDevices, &st) != 0) {
    Say("this machine has no /sys/bus/pci: the chips have device nodes but no PCI entries");
  } else {
    if (::mount("tmpfs", kPciDevices, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                "mode=0755,size=256k") != 0) {
      return InternalError(Errno(std::string("mount tmpfs on ") + kPciDevices));
    }
    TPUFLEET_ASSIGN_OR_RETURN(sys_, WritableClone(kPciDevices));
  }
  TPUFLEET_ASSIGN_OR_RETURN(dev_, WritableClone("/dev"));
  if (ids_->vfio) {
    if (::mkdirat(dev_.get(), "vfio", 0755) != 0 && errno != EEXIST) {
      return InternalError(Errno("mkdir /dev/vfio"));
    }
    // The VFIO container node every VFIO user opens first.
    if (::mknodat(dev_.get(), "vfio/vfio", S_IFCHR | 0666, ::makedev(1, 3)) != 0 &&
        errno != EEXIST) {
      return InternalError(Errno("mknod /dev/vfio/vfio"));
    }
    ::fchmodat(dev_.get(), "vfio/vfio", 0666, 0);
  }
  removed_ = spec.removed;
  for (int chip = 0; chip < chips_; ++chip) {
    if (removed_.count(chip) == 0) {
      TPUFLEET_TRY(Show(chip));
    }
  }
  return Status::Ok();
}

Status WorkerAccelerators::Show(int chip) {
  for (int f = 0; sys_.get() >= 0 && f < ids_->functions_per_chip; ++f) {
    std::string dir = ChipPciAddress(chip, f);
    if (::mkdirat(sys_.get(), dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return InternalError(Errno("mkdir " + dir));
    }
    TPUFLEET_TRY(WriteAt(sys_.get(), dir + "/vendor", kGoogleVendor));
    TPUFLEET_TRY(WriteAt(sys_.get(), dir + "/device", ids_->device));
    TPUFLEET_TRY(WriteAt(sys_.get(), dir + "/subsystem_vendor", kGoogleVendor));
    if (!ids_->subsystem_device.empty()) {
      TPUFLEET_TRY(WriteAt(sys_.get(), dir + "/subsystem_device", ids_->subsystem_device));
    }
    TPUFLEET_TRY(WriteAt(sys_.get(), dir + "/class", "0x120000"));
    if (ids_->vfio) {
      std::string link = dir + "/iommu_group";
      std::string target = "../../../../kernel/iommu_groups/" + std::to_string(chip);
      if (::symlinkat(target.c_str(), sys_.get(), link.c_str()) != 0 && errno != EEXIST) {
        return InternalError(Errno("symlink " + link));
      }
    }
  }
  std::string node = NodeBelowDev(*ids_, chip);
  // Only the init may make device nodes (worker_setup.h): the capability is raised for
  // this call alone.
  TPUFLEET_TRY(SetInitCapability(CAP_MKNOD, true));
  int r = ::mknodat(dev_.get(), node.c_str(), S_IFCHR | 0666, ::makedev(1, 3));
  int err = errno;
  TPUFLEET_TRY(SetInitCapability(CAP_MKNOD, false));
  if (r != 0 && err != EEXIST) {
    errno = err;
    return InternalError(Errno("mknod /dev/" + node));
  }
  ::fchmodat(dev_.get(), node.c_str(), 0666, 0);  // the umask took its write bits
  return Status::Ok();
}

Status WorkerAccelerators::Hide(int chip) {
  for (int f = 0; sys_.get() >= 0 && f < ids_->functions_per_chip; ++f) {
    std::string dir = ChipPciAddress(chip, f);
    for (const char* file : kPciFiles) {
      ::unlinkat(sys_.get(), (dir + "/" + file).c_str(), 0);
    }
    if (::unlinkat(sys_.get(), dir.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
      return InternalError(Errno("remove " + dir));
    }
  }
  std::string node = NodeBelowDev(*ids_, chip);
  if (::unlinkat(dev_.get(), node.c_str(), 0) != 0 && errno != ENOENT) {
    return InternalError(Errno("remove /dev/" + node));
  }
  return Status::Ok();
}

Status WorkerAccelerators::Apply(const std::set<int>& removed) {
  if (ids_ == nullptr) {
    return Status::Ok();
  }
  for (int chip = 0; chip < chips_; ++chip) {
    bool was = removed_.count(chip) != 0;
    bool now = removed.count(chip) != 0;
    if (now && !was) {
      TPUFLEET_TRY(Hide(chip));
      Say("device fault: chip " + std::to_string(chip) + " (" + ChipDeviceNode(*ids_, chip) +
          ") removed");
    } else if (was && !now) {
      TPUFLEET_TRY(Show(chip));
      Say("device fault over: chip " + std::to_string(chip) + " is back");
    }
  }
  removed_ = removed;
  return Status::Ok();
}

}  // namespace tpufleet::emulator::hosts
